"""The PostgreSQL backend's queue cycle, beside Procrastinate and the SQLite backend.

    .venv/bin/python benchmarks/bench_postgres.py [--server postgresql://postgres@127.0.0.1/postgres]
                                                  [--cycles 400] [--rounds 3] [--replicas 1,2,3]

One cycle is one task's life: ``agenttask.create`` + ``agenttask.claimNext`` +
``agenttask.checkpoint(DONE)`` through ``Service.dispatch`` (strict decoding, tier checks,
one audit row per call, every call a durable transaction). Measured in the same run, on
the same server:

* **agent-task on PostgreSQL** (``store/postgres``) with 1 and 8 worker threads;
* **Procrastinate** (PyPI, the PostgreSQL job queue): ``defer`` + ``fetch_job`` +
  ``finish_job(SUCCEEDED)`` with 1 and 8 asyncio workers on its own connection pool (its
  natural model), in a database of its own on the same server;
* **agent-task on SQLite** (the embedded default), 1 and 8 threads;
* **replicas over HTTP**: 1, 2 and 3 ``agent-task serve`` processes on one database, 8
  client threads spread over them, each cycle three HTTP requests.

Rounds are interleaved (every contender once per round) and the median rate is reported,
with the ratio to Procrastinate at the same worker count. Each database is created here and
dropped after.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg

START_MS = 1_700_000_000_000
AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))


def _db_url(server: str, name: str) -> str:
    return urlunsplit(urlsplit(server)._replace(path=f"/{name}"))


def _admin(server: str, sql: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql)


class Database:
    def __init__(self, server: str, name: str) -> None:
        self.server = server
        self.name = name
        _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _admin(server, f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
        self.url = _db_url(server, name)

    def drop(self) -> None:
        _admin(self.server, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


CPU_MS: dict[tuple[str, int], list[float]] = {}
"""This process's CPU per cycle (ms) of each timed run, by ``(contender, workers)``."""


def _timed_cpu(label: str, workers: int, cycles: int, run: Callable[[], float]) -> float:
    """``run()``'s rate; its process CPU per cycle (``time.process_time``) goes to CPU_MS."""
    started = time.process_time()
    rate = run()
    CPU_MS.setdefault((label, workers), []).append(
        (time.process_time() - started) * 1000 / (workers * max(1, cycles // workers))
    )
    return rate


def _threads(workers: int, per_worker: int, cycle: Callable[[], None]) -> float:
    """Cycles per second of ``workers`` threads each running ``per_worker`` cycles."""
    barrier = threading.Barrier(workers + 1)

    def run() -> None:
        barrier.wait()
        for _ in range(per_worker):
            cycle()

    threads = [threading.Thread(target=run) for _ in range(workers)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    return workers * per_worker / (time.perf_counter() - started)


class AgentTask:
    """Service.dispatch on the journal ``database`` names (``None``: SQLite in a temp dir)."""

    def __init__(self, database: str | None) -> None:
        from taskcore import Actor, FakeClock, Service, Tier

        self.root = Path(tempfile.mkdtemp(prefix="bench-pg-"))
        if database is not None:
            os.environ["AGENT_TASK_DATABASE"] = database + "?pool_size=10"
        else:
            os.environ.pop("AGENT_TASK_DATABASE", None)
        try:
            self.service = Service.open(self.root / "data", clock=FakeClock(START_MS))
        finally:
            os.environ.pop("AGENT_TASK_DATABASE", None)
        self.member = Actor(
            token_id="bench-member", workspace="bench", tier=Tier.MEMBER, autonomy=1
        )
        self.worker = Actor(token_id="bench-worker", workspace="bench", tier=Tier.AGENT, autonomy=1)

    def cycle(self) -> None:
        service = self.service
        service.dispatch(self.member, "agenttask.create", b'{"verb":"agent.run","payload":{"n":1}}')
        # Under the shared writer lock a claimNext can answer {claimed: false} while every
        # queued row is row-locked by another claimer or a create is committing; poll again
        # (a cycle still takes exactly one task, so some task is always left for it).
        claim: dict[str, Any] = {"claimed": False}
        while not claim["claimed"]:
            claim = service.dispatch(self.worker, "agenttask.claimNext", b"{}").json()
        body = {
            "taskId": claim["task"]["taskId"],
            "status": "DONE",
            "fence": claim["lease"]["fence"],
        }
        service.dispatch(self.worker, "agenttask.checkpoint", body)

    def rate(self, workers: int, cycles: int) -> float:
        return _threads(workers, max(1, cycles // workers), self.cycle)

    def close(self) -> None:
        self.service.close()
        shutil.rmtree(self.root, ignore_errors=True)


class Procrastinate:
    """defer + fetch_job + finish_job through Procrastinate's own job manager."""

    def __init__(self, url: str, workers: int, *, apply_schema: bool) -> None:
        import procrastinate
        from procrastinate.jobs import Status

        self.status = Status.SUCCEEDED
        self.loop = asyncio.new_event_loop()
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(
                conninfo=url, min_size=workers, max_size=workers
            )
        )

        @self.app.task(name="bench", queue="bench")
        def bench(n: int) -> None:
            del n

        self.task = bench
        self.loop.run_until_complete(self._open(apply_schema))

    async def _open(self, apply_schema: bool) -> None:
        await self.app.open_async()
        if apply_schema:
            await self.app.schema_manager.apply_schema_async()
        self.worker_id = await self.app.job_manager.register_worker()

    async def _cycles(self, workers: int, per_worker: int) -> float:
        manager = self.app.job_manager

        async def one() -> None:
            for _ in range(per_worker):
                await self.task.defer_async(n=1)
                job = None
                while job is None:
                    job = await manager.fetch_job(queues=["bench"], worker_id=self.worker_id)
                await manager.finish_job(job, status=self.status, delete_job=False)

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(workers)))
        return workers * per_worker / (time.perf_counter() - started)

    def rate(self, workers: int, cycles: int) -> float:
        return self.loop.run_until_complete(self._cycles(workers, max(1, cycles // workers)))

    def close(self) -> None:
        self.loop.run_until_complete(self.app.close_async())
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()

        async def settle() -> None:
            await asyncio.gather(*pending, return_exceptions=True)

        self.loop.run_until_complete(settle())
        self.loop.close()


class Replicas:
    """N ``agent-task serve`` processes on one database; 8 HTTP client threads over them."""

    def __init__(self, url: str, n: int) -> None:
        from taskcore.actors import Tier
        from taskcore.auth import issue_token
        from taskcore.clock import SystemClock
        from taskcore.store import open_storage

        self.root = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
        self.procs: list[subprocess.Popen[str]] = []
        self.urls: list[str] = []
        for i in range(n):
            proc = subprocess.Popen(
                [
                    AGENT_TASK,
                    "serve",
                    "--data-dir",
                    str(self.root / f"r{i}"),
                    "--database",
                    url,
                    "--port",
                    "0",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert proc.stderr is not None
            for line in proc.stderr:
                if "serving http://" in line:
                    self.urls.append(line.split("serving ", 1)[1].split(" ", 1)[0])
                    break
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            self.procs.append(proc)
        storage = open_storage(self.root, database=url)
        try:
            self.token = issue_token(
                storage,
                SystemClock(),
                workspace="bench",
                tier=Tier.MEMBER,
                autonomy=1,
                name="bench",
            ).token
        finally:
            storage.close()
        self.next = 0
        self.lock = threading.Lock()
        self.local = threading.local()

    def _client(self) -> httpx.Client:
        client = getattr(self.local, "client", None)
        if client is None:
            with self.lock:
                url = self.urls[self.next % len(self.urls)]
                self.next += 1
            client = httpx.Client(base_url=url, timeout=60)
            self.local.client = client
        return client

    def _post(self, verb: str, body: object) -> dict:
        r = self._client().post(
            f"/v/{verb}",
            content=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"},
        )
        r.raise_for_status()
        return r.json()

    def cycle(self) -> None:
        self._post("agenttask.create", {"verb": "agent.run", "payload": {"n": 1}})
        claim: dict[str, Any] = {"claimed": False}
        while not claim["claimed"]:  # see AgentTask.cycle
            claim = self._post("agenttask.claimNext", {})
        self._post(
            "agenttask.checkpoint",
            {"taskId": claim["task"]["taskId"], "status": "DONE", "fence": claim["lease"]["fence"]},
        )

    def rate(self, workers: int, cycles: int) -> float:
        return _threads(workers, max(1, cycles // workers), self.cycle)

    def close(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(60)
        shutil.rmtree(self.root, ignore_errors=True)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--server",
        default=os.environ.get(
            "AGENT_TASK_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--cycles", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replicas", default="1,2,3", help="replica counts ('' for none)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]

    ours_db = Database(args.server, f"bench_agent_task_{os.getpid()}")
    theirs_db = Database(args.server, f"bench_procrastinate_{os.getpid()}")
    rows: list[dict[str, object]] = []
    try:
        ours = AgentTask(ours_db.url)
        sqlite = AgentTask(None)
        rates: dict[tuple[str, int], list[float]] = {}
        for workers in (1, 8):
            theirs = Procrastinate(theirs_db.url, workers, apply_schema=workers == 1)
            try:
                for _ in range(args.rounds):
                    for label, contender in (
                        ("agent-task on PostgreSQL", ours),
                        ("Procrastinate", theirs),
                        ("agent-task on SQLite", sqlite),
                    ):
                        rates.setdefault((label, workers), []).append(
                            _timed_cpu(
                                label,
                                workers,
                                args.cycles,
                                functools.partial(contender.rate, workers, args.cycles),
                            )
                        )
            finally:
                theirs.close()
        ours.close()
        sqlite.close()
        for workers in (1, 8):
            base = _median(rates[("Procrastinate", workers)])
            for label in ("agent-task on PostgreSQL", "Procrastinate", "agent-task on SQLite"):
                rate = _median(rates[(label, workers)])
                rows.append(
                    {
                        "case": f"{label}, {workers} worker{'s' if workers > 1 else ''}",
                        "cycles_per_s": rate,
                        "vs_procrastinate": rate / base,
                        "cpu_ms_per_cycle": _median(CPU_MS[(label, workers)]),
                    }
                )
        with psycopg.connect(ours_db.url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        for n in (int(x) for x in args.replicas.split(",") if x.strip()):
            cluster = Replicas(ours_db.url, n)
            try:
                values = [cluster.rate(8, args.cycles) for _ in range(args.rounds)]
            finally:
                cluster.close()
            rows.append(
                {
                    "case": f"{n} replica{'s' if n > 1 else ''} over HTTP, 8 clients",
                    "cycles_per_s": _median(values),
                    "vs_procrastinate": None,
                }
            )
    finally:
        ours_db.drop()
        theirs_db.drop()
    print(
        f"load average (1 min) {load_before:.2f} at start, {os.getloadavg()[0]:.2f} at end, "
        f"{os.cpu_count()} cores"
    )
    print(f"{'case':52} {'cycles/s':>10} {'vs Procrastinate':>17} {'CPU ms/cycle':>13}")
    for row in rows:
        ratio = row["vs_procrastinate"]
        shown = "" if ratio is None else f"{ratio:.2f}x"
        cpu = row.get("cpu_ms_per_cycle")
        cpu_shown = "" if cpu is None else f"{cpu:.2f}"
        print(f"{row['case']:52} {row['cycles_per_s']:10.0f} {shown:>17} {cpu_shown:>13}")
    print(
        "CPU ms/cycle: this benchmark process's CPU (time.process_time) over the timed cycles, "
        "median of the rounds (server CPU not included)"
    )
    return rows


if __name__ == "__main__":
    main()
