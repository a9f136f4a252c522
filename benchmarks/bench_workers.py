"""``agent-task serve --workers 2`` against ``--workers 1``: 8 HTTP clients, same run.

    .venv/bin/python benchmarks/bench_workers.py [--clients 8] [--cycles 400] [--rounds 5]
                                                 [--workers 2] [--database URL]

Two real ``agent-task serve`` processes run side by side for the whole run, one with
``--workers 1`` and one with ``--workers N`` (``--token-rate 0``: the benchmark's one token
is not rate limited), each on its own data dir (SQLite, WAL, ``synchronous=FULL``) or, with
``--database``, both on one PostgreSQL database the benchmark creates on that server (and
drops after), in workspaces of their own.

A round fills each server's queue with ``--cycles`` tasks, then drains it with ``--clients``
concurrent clients (threads of this process on stdlib ``http.client`` keep-alive
connections, the cheapest client Python has, so the clients take as little of the shared
cores as possible): ``POST /v/agenttask.claimNext``, then ``POST /v/agenttask.checkpoint``
with ``status: DONE`` and the lease's fence, until the queue is empty. Rounds alternate which
server goes first, and only one server is driven at a time. Each round's answers are checked:
every drained task is a distinct task, DONE once, and the count is the count filled (0 double
claims), else the benchmark exits non-zero.

Reported: cycles/s of each server per round, the median, the ratio N workers / 1 worker
(goal >= 1.4x on 2 cores), and the machine's 1-minute load average beside each round (the
clients, both servers and whatever else runs on the machine share its cores).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))
GOAL = 1.4


class Server:
    """One ``agent-task serve --workers N`` child."""

    def __init__(self, workers: int, database: str | None) -> None:
        self.workers = workers
        self.workspace = f"bench{workers}"
        self.data = Path(tempfile.mkdtemp(prefix=f"bench-workers{workers}-"))
        env = dict(os.environ)
        env.pop("OTEL_TRACES_EXPORTER", None)
        if database:
            env["AGENT_TASK_DATABASE"] = database
        else:
            env.pop("AGENT_TASK_DATABASE", None)
        self.env = env
        self.proc = subprocess.Popen(
            [
                AGENT_TASK,
                "serve",
                "--data-dir",
                str(self.data),
                "--port",
                "0",
                "--workers",
                str(workers),
                "--token-rate",
                "0",
                "--log-level",
                "error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stderr is not None
        lines = []
        self.url = ""
        for line in self.proc.stderr:
            lines.append(line)
            if "serving http://" in line:
                self.url = line.split("serving ", 1)[1].split(" ", 1)[0]
                break
        if not self.url:
            raise SystemExit("server did not start:\n" + "".join(lines))
        # The request log goes to stderr: drain it so the server never blocks on the pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        done = subprocess.run(
            [
                AGENT_TASK,
                "admin",
                "token",
                "create",
                "--data-dir",
                str(self.data),
                "--workspace",
                self.workspace,
                "--tier",
                "member",
                "--autonomy",
                "3",
            ],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        self.token = done.stdout.strip()
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        self.address = (host, int(port))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for _ in self.proc.stderr:
            pass

    def pids(self) -> list[int]:
        """The server's processes: the supervisor (or the one server) and its workers."""
        pid = self.proc.pid
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            children = []
        return [pid, *map(int, children)]

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the server's processes used so far (Linux ``/proc``)."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.data, ignore_errors=True)


class _Database:
    """A database of the benchmark's own on the server ``--database`` names, dropped after."""

    def __init__(self, server: str) -> None:
        import psycopg
        from psycopg import sql

        self.server, self.name = server, f"bench_workers_{os.getpid()}"
        self._sql = sql
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        self.url = urlunsplit(urlsplit(server)._replace(path=f"/{self.name}"))

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(
                self._sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    self._sql.Identifier(self.name)
                )
            )


def _post(conn: http.client.HTTPConnection, path: str, body: bytes, token: str) -> Any:
    conn.request(
        "POST",
        path,
        body,
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise SystemExit(f"{path}: {response.status} {data[:300]!r}")
    return json.loads(data)


def fill(server: Server, n: int, clients: int) -> None:
    per = [n // clients + (1 if i < n % clients else 0) for i in range(clients)]

    def create(i: int) -> None:
        conn = http.client.HTTPConnection(*server.address, timeout=60)
        for k in range(per[i]):
            _post(
                conn,
                "/v/agenttask.create",
                json.dumps({"verb": "agent.run", "payload": {"k": k}}).encode(),
                server.token,
            )
        conn.close()

    _threads(clients, create)


def _threads(n: int, target: Any) -> float:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def drain(server: Server, clients: int, expected: int) -> tuple[float, float]:
    """Drain the queue with ``clients`` clients; cycles/s and the server's CPU per cycle (ms).

    Every answer is checked first."""
    done: list[list[str]] = [[] for _ in range(clients)]

    def client(i: int) -> None:
        conn = http.client.HTTPConnection(*server.address, timeout=60)
        while True:
            answer = _post(conn, "/v/agenttask.claimNext", b"{}", server.token)
            if not answer["claimed"]:
                break
            lease = answer["lease"]
            body = json.dumps(
                {"taskId": lease["taskId"], "status": "DONE", "fence": lease["fence"]}
            ).encode()
            result = _post(conn, "/v/agenttask.checkpoint", body, server.token)
            if result.get("status", "DONE") != "DONE":
                raise SystemExit(f"checkpoint did not record DONE: {result}")
            done[i].append(lease["taskId"])
        conn.close()

    cpu = server.cpu_seconds()
    elapsed = _threads(clients, client)
    cpu = server.cpu_seconds() - cpu
    ids = [t for per in done for t in per]
    if len(ids) != expected or len(set(ids)) != expected:
        raise SystemExit(
            f"{server.workers} workers: expected {expected} distinct DONE tasks, got "
            f"{len(ids)} ({len(set(ids))} distinct)"
        )
    return expected / elapsed, cpu * 1000 / expected


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--cycles", type=int, default=400, help="tasks drained per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--database",
        help="a postgresql:// URL of a server: the benchmark creates its own database there "
        "and drops it after (default: SQLite journals)",
    )
    args = parser.parse_args(argv)

    database = _Database(args.database) if args.database else None
    url = database.url if database else None
    one = Server(1, url)
    many = Server(args.workers, url)
    try:
        backend = "postgresql" if args.database else "sqlite"
        print(
            f"backend {backend}, {args.clients} clients, {args.cycles} cycles per round, "
            f"{args.rounds} rounds, {os.cpu_count()} cores"
        )
        fill(one, args.clients * 2, args.clients)  # warm-up: imports, connections, caches
        fill(many, args.clients * 2, args.clients)
        drain(one, args.clients, args.clients * 2)
        drain(many, args.clients, args.clients * 2)
        print(
            f"{'round':>5}  {'1 worker c/s':>12}  {f'{args.workers} workers c/s':>14}  "
            f"{'ratio':>6}  {'load 1m':>7}  {'cpu ms/cycle 1 / N':>18}"
        )
        ones, manys = [], []
        for r in range(args.rounds):
            fill(one, args.cycles, args.clients)
            fill(many, args.cycles, args.clients)
            order = (one, many) if r % 2 == 0 else (many, one)
            runs = {s.workers: drain(s, args.clients, args.cycles) for s in order}
            got = {w: run[0] for w, run in runs.items()}
            ones.append(got[1])
            manys.append(got[args.workers])
            print(
                f"{r + 1:>5}  {got[1]:>12.1f}  {got[args.workers]:>14.1f}  "
                f"{got[args.workers] / got[1]:>5.2f}x  {os.getloadavg()[0]:>7.2f}  "
                f"{runs[1][1]:>8.2f} / {runs[args.workers][1]:<7.2f}",
                flush=True,
            )
        ratio = statistics.median(manys) / statistics.median(ones)
        print(
            f"{'median':>5}  {statistics.median(ones):>12.1f}  "
            f"{statistics.median(manys):>14.1f}  {ratio:>5.2f}x  "
            f"(goal >= {GOAL}x: {'met' if ratio >= GOAL else 'not met'})"
        )
        return {"ratio": ratio, "one": statistics.median(ones), "many": statistics.median(manys)}
    finally:
        one.stop()
        many.stop()
        if database is not None:
            database.drop()


if __name__ == "__main__":
    main()
