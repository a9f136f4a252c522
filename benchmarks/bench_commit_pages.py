"""What a SQLite commit costs per page it writes, on this machine's disk (issue 30, item 3).

    .venv/bin/python benchmarks/bench_commit_pages.py [--pages 1,2,4,8,16] [--commits 200]
                                                      [--rounds 5] [--dir PATH]

Issue 30 asks for <= 4 WAL frames per verb (create 9.3, claimNext 7.4, checkpoint DONE 6.3
today), on the reasoning that a commit's cost grows with the pages it writes. This measures
that reasoning on the disk the journal lives on: the journal's own settings (WAL,
``synchronous=FULL``, apsw), one transaction per commit that inserts one 200-byte row into
each of N tables (N distinct B-tree leaf pages, so N WAL frames; the WAL hook counts the
frames each commit really wrote), and only the ``COMMIT`` timed (its WAL write and fsync).
Rounds interleave the page counts, so every count sees the same machine.

Reported per page count: the median commit time over all rounds [p25-p75], the frames per
commit seen, and the ratio to the 1-page commit; then a least-squares line through the
medians (fixed cost + cost per page) and what it predicts for the queue's verbs: a commit of
7.7 frames (the mean of the three verbs) against one of 4 (the goal).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import apsw

ROW = b"x" * 200
VERBS_NOW = 7.7
GOAL = 4.0


class Journal:
    """A WAL journal with ``tables`` tables, set up as the service sets up its own."""

    def __init__(self, path: Path, tables: int) -> None:
        self.conn = apsw.Connection(str(path))
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.frames: list[int] = []
        self._last = 0
        self.conn.set_wal_hook(self._hook)
        with self.conn:
            for i in range(tables):
                self.conn.execute(f"CREATE TABLE t{i} (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")

    def _hook(self, conn: apsw.Connection, name: str, pages: int) -> int:
        # ``pages`` is the WAL's frame count; it restarts from 0 after a checkpoint.
        self.frames.append(pages - self._last if pages > self._last else pages)
        self._last = pages
        if pages >= 1000:  # SQLite's own autocheckpoint point, as the service does
            conn.wal_checkpoint(name, apsw.SQLITE_CHECKPOINT_PASSIVE)
            self._last = 0
        return int(apsw.SQLITE_OK)

    def commit_touching(self, pages: int) -> float:
        """One transaction writing ``pages`` leaf pages; the seconds its ``COMMIT`` took."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        for i in range(pages):
            conn.execute(f"INSERT INTO t{i} (v) VALUES (?)", (ROW,))
        started = time.perf_counter()
        conn.execute("COMMIT")
        return time.perf_counter() - started

    def close(self) -> None:
        self.conn.close()


def _quantiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return q[0], statistics.median(ordered), q[2]


def line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares ``(fixed, per_page)`` through ``(pages, seconds)`` points.

    >>> line([(1, 3.0), (2, 5.0), (4, 9.0)])
    (1.0, 2.0)
    """
    xs = [p for p, _ in points]
    ys = [s for _, s in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - slope * mx, slope


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="1,2,4,8,16", help="page counts, comma-separated")
    parser.add_argument("--commits", type=int, default=200, help="commits per count per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the journal goes (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    counts = sorted({int(p) for p in args.pages.split(",") if p.strip()})
    if not counts or counts[0] < 1:
        parser.error("--pages: positive page counts")

    root = Path(tempfile.mkdtemp(prefix="bench-commit-", dir=args.dir))
    journal = Journal(root / "journal.sqlite", max(counts))
    times: dict[int, list[float]] = {n: [] for n in counts}
    frames: dict[int, list[int]] = {n: [] for n in counts}
    try:
        for n in counts:  # warm-up: the tables' first pages, the WAL file's first growth
            for _ in range(20):
                journal.commit_touching(n)
        load = os.getloadavg()[0]
        for r in range(args.rounds):
            order = counts if r % 2 == 0 else counts[::-1]
            for n in order:
                journal.frames.clear()
                for _ in range(args.commits):
                    times[n].append(journal.commit_touching(n))
                frames[n].extend(journal.frames)
    finally:
        journal.close()
        shutil.rmtree(root, ignore_errors=True)

    print(
        f"SQLite commit cost per page written (WAL, synchronous=FULL), {args.rounds} rounds x "
        f"{args.commits} commits per count; load average (1 min) {load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end"
    )
    print(f"{'pages':>5}  {'frames/commit':>13}  {'COMMIT ms p50 [p25-p75]':>26}  {'vs 1 page':>9}")
    medians: dict[int, float] = {}
    base = None
    for n in counts:
        q1, med, q3 = _quantiles(times[n])
        medians[n] = med
        base = base or med
        seen = statistics.fmean(frames[n]) if frames[n] else float("nan")
        print(
            f"{n:>5}  {seen:>13.1f}  {med * 1000:>9.3f} [{q1 * 1000:.3f}-{q3 * 1000:.3f}]"
            f"{'':>3}  {med / base:>8.2f}x"
        )
    fixed, per_page = line([(float(n), medians[n]) for n in counts])
    now = fixed + per_page * VERBS_NOW
    goal = fixed + per_page * GOAL
    print(
        f"fit: {fixed * 1000:.3f} ms fixed + {per_page * 1000:.4f} ms per page; a commit of "
        f"{VERBS_NOW} frames (the verbs today) {now * 1000:.3f} ms, of {GOAL:g} frames (the "
        f"goal) {goal * 1000:.3f} ms: the goal would save {(1 - goal / now) * 100:.1f} % of "
        "each commit"
    )
    return {"fixed_ms": fixed * 1000, "per_page_ms": per_page * 1000, "saving": 1 - goal / now}


if __name__ == "__main__":
    main()
