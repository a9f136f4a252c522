"""Which B-trees each commit of one caller's queue cycle writes (SQLite WAL frames by owner).

    .venv/bin/python benchmarks/wal_pages.py [--cycles 100]

Runs ``bench_queue.AgentTask``'s cycle (``agenttask.create`` + ``claimNext`` +
``checkpoint(DONE)`` through ``Service.dispatch``) after a warm-up and, after each commit, reads
the WAL frames that commit appended (their page numbers, from the WAL file's frame headers);
at the end it names each page's B-tree (table or index) with the ``dbstat`` virtual table.
Prints, per verb, the mean frames per commit and the mean pages per B-tree: where the
``WAL frames per commit`` row of ``run_all.py`` goes (docs/performance.md, "WAL frames per
verb").
"""

from __future__ import annotations

import argparse
import collections
import statistics
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

VERBS = ("create", "claimNext", "DONE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=100)
    args = parser.parse_args()

    import apsw
    from bench_queue import AgentTask
    from taskcore.store.sqlite import SqliteDatabase

    commits: list[list[int]] = []
    state = {"last": 0, "on": False, "wal": None}
    own = SqliteDatabase._wal_hook

    def counting(self: SqliteDatabase, conn: Any, name: str, pages: int) -> int:
        if state["on"]:
            start = state["last"] if pages > state["last"] else 0
            wal = Path(conn.filename + "-wal").read_bytes()
            size = struct.unpack(">I", wal[8:12])[0]
            commits.append(
                [
                    struct.unpack(">I", wal[32 + i * (24 + size) : 36 + i * (24 + size)])[0]
                    for i in range(start, pages)
                ]
            )
        state["last"] = pages
        return own(self, conn, name, pages)

    SqliteDatabase._wal_hook = counting  # type: ignore[method-assign]
    ours = AgentTask()
    try:
        for _ in range(10):
            ours.cycle()
        state["on"] = True
        for _ in range(args.cycles):
            ours.cycle()
        state["on"] = False
        path = ours.root / "data"
        db = next(p for p in path.rglob("*") if p.is_file() and (Path(str(p) + "-wal")).exists())
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        owner = {int(p): str(n) for n, p in conn.execute("SELECT name, pageno FROM dbstat")}
        conn.close()
    finally:
        SqliteDatabase._wal_hook = own  # type: ignore[method-assign]
        ours.close()
    if len(commits) != 3 * args.cycles:
        sys.exit(f"expected {3 * args.cycles} commits, saw {len(commits)}")
    for i, verb in enumerate(VERBS):
        mine = commits[i::3]
        mean = statistics.fmean(len(c) for c in mine)
        where: collections.Counter[str] = collections.Counter()
        for c in mine:
            where.update(owner.get(p, f"page {p} (freed)") for p in c)
        parts = ", ".join(f"{n} {k / len(mine):.2f}" for n, k in where.most_common())
        print(f"{verb:>9}: {mean:.2f} frames per commit: {parts}")


if __name__ == "__main__":
    main()
