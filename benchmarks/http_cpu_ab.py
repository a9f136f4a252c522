"""Server CPU per HTTP queue request: this tree against another checkout, rounds alternating.

``run_all.py``'s ``http_cpu`` row measures one server beside its echo route. To see what a
change did, this runs two servers at once, one from this tree and one from ``--before`` (a
checkout of another commit, e.g. ``git worktree add /tmp/before <commit>``; its sources go
first on ``PYTHONPATH``, the same installed dependencies serve both), and alternates the
rounds between them so both see the same machine. Each round drives ``--pairs`` claimNext +
checkpoint pairs over one kept-alive connection with the lean asyncio client and reads the
server's own CPU time from ``/proc``; then the same number of echo requests.

    .venv/bin/python benchmarks/http_cpu_ab.py --before /tmp/before --rounds 15
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http import ECHO_BODY, fill
from run_all import PY, ROOT, _cpu_seconds, _lean_post, spread

PACKAGES = ("taskcore", "taskhttp", "taskmcp", "taskcli", "taskboard")


class Server:
    """One ``bench_http.py --serve`` child from ``root``, with its own data directory."""

    def __init__(self, root: Path) -> None:
        from taskcore import Tier
        from taskcore.auth import TokenAdmin

        self.root = root
        self.data = Path(tempfile.mkdtemp(prefix="http-ab-"))
        with TokenAdmin(self.data, create=True) as admin:
            self.token = admin.create(workspace="bench", tier=Tier.AGENT, autonomy=1).token
        env = dict(os.environ)
        if root != ROOT:
            env["PYTHONPATH"] = os.pathsep.join(
                str(root / "packages" / p / "src") for p in PACKAGES
            )
            subprocess.run(
                [PY, "-m", "compileall", "-q", "-j", "0", *env["PYTHONPATH"].split(os.pathsep)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        self.child = subprocess.Popen(
            [PY, str(root / "benchmarks" / "bench_http.py"), "--serve", str(self.data)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.child.stdout is not None
        host, port = self.child.stdout.readline().strip().removeprefix("http://").split(":")
        self.host, self.port = host, int(port)

    async def _queue(self, pairs: int) -> float:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        before = _cpu_seconds(self.child.pid)
        for _ in range(pairs):
            _, body = await _lean_post(reader, writer, "/v/agenttask.claimNext", b"{}", self.token)
            lease = json.loads(body)["lease"]
            done = {"taskId": lease["taskId"], "status": "DONE", "fence": lease["fence"]}
            status, _ = await _lean_post(
                reader, writer, "/v/agenttask.checkpoint", json.dumps(done).encode(), self.token
            )
            assert status == 200
        cpu = _cpu_seconds(self.child.pid) - before
        writer.close()
        return cpu * 1000 / (2 * pairs)

    async def _echo(self, requests: int) -> float:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        before = _cpu_seconds(self.child.pid)
        for _ in range(requests):
            status, _ = await _lean_post(reader, writer, "/bench/echo", ECHO_BODY, None)
            assert status == 200
        cpu = _cpu_seconds(self.child.pid) - before
        writer.close()
        return cpu * 1000 / requests

    def round(self, pairs: int) -> tuple[float, float]:
        fill(self.data, pairs)  # not timed: the server's CPU is what is read
        return asyncio.run(self._queue(pairs)), asyncio.run(self._echo(2 * pairs))

    def close(self) -> None:
        self.child.terminate()
        self.child.wait(60)
        shutil.rmtree(self.data, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of another commit")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--pairs", type=int, default=200)
    args = parser.parse_args()
    servers = {"before": Server(args.before.resolve()), "this tree": Server(ROOT)}
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    try:
        for server in servers.values():  # warm-up, not counted
            server.round(args.pairs)
        for _ in range(args.rounds):
            for name, server in servers.items():
                got[name].append(server.round(args.pairs))
    finally:
        for server in servers.values():
            server.close()
    print(f"{args.rounds} alternating rounds of {args.pairs} claimNext + checkpoint pairs")
    print("| server | CPU per queue request, ms | CPU per echo request, ms |")
    print("|---|---|---|")
    for name, rows in got.items():
        q = spread([r[0] for r in rows])
        e = spread([r[1] for r in rows])
        print(
            f"| {name} | {q[0]:.3f} [{q[1]:.3f}-{q[2]:.3f}] | {e[0]:.3f} [{e[1]:.3f}-{e[2]:.3f}] |"
        )


if __name__ == "__main__":
    main()
