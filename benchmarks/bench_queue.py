"""Agent task queue figures, beside same-run baselines.

    .venv/bin/python benchmarks/bench_queue.py [--cycles 2000] [--sizes 1000,10000,100000,1000000]
                                               [--probes 200] [--rounds 10]

Measured, each on a fresh temp directory on the same disk:

* **cycles per second** of one task's life in process: ``agenttask.create`` +
  ``agenttask.claimNext`` + ``agenttask.checkpoint(DONE)`` through ``Service.dispatch`` (strict
  decoding, tier checks, one audit event per call, WAL with ``synchronous=FULL``), beside
  - ``litequeue`` 0.9 (PyPI): ``put`` + ``pop`` + ``done``, as shipped (``synchronous=NORMAL``)
    and with ``synchronous=FULL`` (the durability the journal gives);
  - raw apsw: the same three writes as three bare ``BEGIN IMMEDIATE`` transactions on a
    three-column table (WAL, ``synchronous=FULL``): the floor for three durable commits;
* **claimNext latency** with 10^3 .. 10^6 tasks queued (through ``Service.dispatch``, and the
  store's index probe alone), beside ``litequeue.pop`` on a queue of the same size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import litequeue
from taskcore import Actor, FakeClock, Service, Tier
from taskcore.store.queue_api import TaskRecord

START_MS = 1_700_000_000_000
MEMBER = Actor(token_id="bench-member", workspace="bench", tier=Tier.MEMBER, autonomy=1)
WORKER = Actor(token_id="bench-worker", workspace="bench", tier=Tier.AGENT, autonomy=1)


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="bench-queue-", dir=os.environ.get("BENCH_DIR")))


def _rate(n: int, fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - started)


# -- cycles -------------------------------------------------------------------------------------
# Each contender is set up once and then measured in interleaved rounds (A B C D A B C D ...), so
# a slow patch of the disk (fsync latency on a VM varies a lot) hits every contender alike; the
# reported rate is the median over rounds.


class AgentTask:
    label = "agent-task (Service.dispatch, audited, sync FULL)"

    def __init__(self) -> None:
        self.root = _tmp()
        self.service = Service.open(self.root / "data", clock=FakeClock(START_MS))

    def cycle(self) -> None:
        service = self.service
        service.dispatch(MEMBER, "agenttask.create", b'{"verb":"agent.run","payload":{"n":1}}')
        claim = service.dispatch(WORKER, "agenttask.claimNext", b"{}").json()
        body = {
            "taskId": claim["task"]["taskId"],
            "status": "DONE",
            "fence": claim["lease"]["fence"],
        }
        service.dispatch(WORKER, "agenttask.checkpoint", body)

    def close(self) -> None:
        self.service.close()
        shutil.rmtree(self.root)


class LiteQueue:
    def __init__(self, *, full_sync: bool) -> None:
        self.label = "litequeue put+pop+done (sync " + (
            "FULL)" if full_sync else "NORMAL, as shipped)"
        )
        self.root = _tmp()
        self.queue = litequeue.LiteQueue(str(self.root / "lq.sqlite"))
        if full_sync:
            self.queue.conn.execute("PRAGMA synchronous = FULL")

    def cycle(self) -> None:
        self.queue.put('{"n":1}')
        message = self.queue.pop()
        self.queue.done(message.message_id)

    def close(self) -> None:
        self.queue.close()
        shutil.rmtree(self.root)


class RawApsw:
    label = "raw apsw: 3 bare durable transactions"

    def __init__(self) -> None:
        self.root = _tmp()
        self.conn = apsw.Connection(str(self.root / "raw.sqlite"))
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, status INTEGER, payload TEXT)")
        self.next_id = 0

    def _tx(self, sql: str, args: tuple[object, ...]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(sql, args)
        self.conn.execute("COMMIT")

    def cycle(self) -> None:
        self.next_id += 1
        i = self.next_id
        self._tx("INSERT INTO t VALUES (?, 0, ?)", (i, '{"n":1}'))
        self._tx("UPDATE t SET status = 1 WHERE id = ? AND status = 0", (i,))
        self._tx("UPDATE t SET status = 2 WHERE id = ? AND status = 1", (i,))

    def close(self) -> None:
        self.conn.close()
        shutil.rmtree(self.root)


def cycle_rates(n: int, rounds: int) -> list[tuple[str, float]]:
    contenders = [AgentTask(), LiteQueue(full_sync=False), LiteQueue(full_sync=True), RawApsw()]
    rates: dict[str, list[float]] = {c.label: [] for c in contenders}
    try:
        for _ in range(rounds):
            for contender in contenders:
                rates[contender.label].append(_rate(max(1, n // rounds), contender.cycle))
    finally:
        for contender in contenders:
            contender.close()
    return [(label, statistics.median(values)) for label, values in rates.items()]


# -- claimNext latency ---------------------------------------------------------------------------


def _seed(service: Service, n: int) -> None:
    chunk = 50_000
    for start in range(0, n, chunk):
        with service.storage.write() as tx:
            for i in range(start, min(n, start + chunk)):
                tx.queue.insert_task(
                    TaskRecord(
                        task_id=f"at_{i:032x}",
                        workspace="bench",
                        verb="agent.run",
                        payload_json='{"n":1}',
                        status="QUEUED",
                        priority=i % 7,
                        autonomy_ceiling=1,
                        depth=0,
                        parent_task_id=None,
                        run_id=None,
                        matter_id=None,
                        matter_step_id=None,
                        created_by="bench-member",
                        created_at_ms=START_MS + i,
                        updated_at_ms=START_MS + i,
                    )
                )


def _timed(fn: Callable[[], object], probes: int) -> list[float]:
    out = []
    for _ in range(probes):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1e6)
    return out


def latency_agent_task(n: int, probes: int) -> tuple[list[float], list[float], list[float]]:
    root = _tmp()
    service = Service.open(root / "data", clock=FakeClock(START_MS + n))
    _seed(service, n)
    service.close()  # the last connection to close checkpoints the WAL into the database
    service = Service.open(root / "data", clock=FakeClock(START_MS + n))
    try:
        for _ in range(5):  # warm the page cache as a running service would be
            service.dispatch(WORKER, "agenttask.claimNext", b"{}")

        def probe() -> object:
            with service.storage.read() as tx:
                return tx.queue.best_claimable(
                    "bench", max_autonomy=3, autonomy=1, verb=None, now_ms=START_MS + n
                )

        index_only = _timed(probe, probes)
        # A bare durable commit on the same disk, timed right after each claimNext, so fsync
        # noise (large on a VM) shows up in both columns alike.
        floor = RawApsw()
        claims: list[float] = []
        commits: list[float] = []
        try:
            for _ in range(probes):
                claims.extend(
                    _timed(lambda: service.dispatch(WORKER, "agenttask.claimNext", b"{}"), 1)
                )
                commits.extend(
                    _timed(lambda: floor._tx("INSERT INTO t VALUES (NULL, 0, '')", ()), 1)
                )
        finally:
            floor.close()
        return claims, index_only, commits
    finally:
        service.close()
        shutil.rmtree(root)


def latency_litequeue(n: int, probes: int) -> list[float]:
    root = _tmp()
    queue = litequeue.LiteQueue(str(root / "lq.sqlite"))
    try:
        chunk = 50_000
        for start in range(0, n, chunk):
            with queue.transaction():
                for _ in range(start, min(n, start + chunk)):
                    queue.put('{"n":1}')
        queue.close()
        queue = litequeue.LiteQueue(str(root / "lq.sqlite"))
        for _ in range(5):
            queue.pop()
        return _timed(queue.pop, probes)
    finally:
        queue.close()
        shutil.rmtree(root)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    print(
        f"python {sys.version.split()[0]}, sqlite {apsw.sqlite_lib_version()}, "
        f"apsw {apsw.apsw_version()}, litequeue 0.9, {os.cpu_count()} CPUs"
    )

    print(
        f"\n== create + claimNext + checkpoint(DONE) cycles: {args.cycles} each, in "
        f"{args.rounds} interleaved rounds, median =="
    )
    rows = cycle_rates(args.cycles, args.rounds)
    ours = rows[0][1]
    for label, rate in rows:
        print(f"{label:<55} {rate:>9.0f} cycles/s   agent-task/this = {ours / rate:5.2f}")

    print(f"\n== claimNext latency, {args.probes} probes each (microseconds, p50) ==")
    print(
        f"{'queued':>9} {'claimNext':>10} {'p99':>7} {'commit':>7} {'claim/commit':>13} "
        f"{'index probe':>12} {'litequeue.pop':>14} {'p99':>7} {'pop/claimNext':>14}"
    )
    for size in (int(s) for s in args.sizes.split(",") if s):
        claims, index, commits = latency_agent_task(size, args.probes)
        pops = latency_litequeue(size, args.probes)
        p50, commit = statistics.median(claims), statistics.median(commits)
        pop = statistics.median(pops)
        print(
            f"{size:>9} {p50:>10.0f} {_p(claims, 0.99):>7.0f} {commit:>7.0f} "
            f"{p50 / commit:>13.2f} {statistics.median(index):>12.1f} {pop:>14.0f} "
            f"{_p(pops, 0.99):>7.0f} {pop / p50:>14.2f}"
        )


if __name__ == "__main__":
    main()
