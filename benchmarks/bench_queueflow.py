"""Queue flow (issue 28): what unique keys, concurrency keys, dependencies and createMany cost.

    .venv/bin/python benchmarks/bench_queueflow.py [--cycles 600] [--rounds 6] [--batch 500]

Each figure is a ratio against a baseline measured in the same invocation, on the same disk,
in interleaved rounds (A B A B ...; the median round is reported), through
``Service.dispatch`` on the SQLite journal (strict decoding, tiers, one audit event per call):

* **plain cycle**: ``create`` + ``claimNext`` + ``checkpoint(DONE)`` in a workspace that uses no
  flow field, beside the same cycle with the queue-flow hooks switched off in process (no
  ``gates_claims`` probe, no flow bookkeeping on a status move): what every queue user pays;
* **keyed cycle**: the same cycle with ``concurrencyKey`` (limit above 1, a second key's task
  held leased, so every claim runs the gated statement), beside the plain cycle;
* **after cycle**: each task created ``after`` the previous one (so the claim checks a parent),
  beside the plain cycle;
* **unique create**: ``create`` with a ``uniqueKey`` (a new key each time), beside a plain create;
* **createMany**: ``--batch`` tasks in one ``agenttask.createMany``, beside as many
  ``agenttask.create`` calls (each its own durable commit);
* **blocked ahead**: ``claimNext`` latency (median of ``--probes``) when ``--blocked`` tasks
  waiting on an unfinished parent come first in drain order, beside the same claim with the
  parent's other children absent: the gate checks each passed-over task.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from taskcore import Actor, FakeClock, Service, Tier
from taskcore.queue import common
from taskcore.store import sqlite_queueflow

START_MS = 1_700_000_000_000
MEMBER = Actor(token_id="bench-member", workspace="bench", tier=Tier.MEMBER, autonomy=1)
ADMIN = Actor(token_id="bench-admin", workspace="bench", tier=Tier.ADMIN, autonomy=3)
WORKER = Actor(token_id="bench-worker", workspace="bench", tier=Tier.AGENT, autonomy=1)
HOLDER = Actor(token_id="bench-holder", workspace="bench", tier=Tier.AGENT, autonomy=1)


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="bench-queueflow-", dir=os.environ.get("BENCH_DIR")))


def _never(store: sqlite_queueflow.SqliteQueueFlowStore, workspace: str) -> bool:
    return False


@contextmanager
def _hooks_off() -> Iterator[None]:
    """The queue without its flow work: the baseline of what the feature costs everyone."""
    settle, gates = common._settle_flow, sqlite_queueflow.SqliteQueueFlowStore.gates_claims
    common._settle_flow = lambda call, before, after, known=None: None
    setattr(sqlite_queueflow.SqliteQueueFlowStore, "gates_claims", _never)  # noqa: B010
    try:
        yield
    finally:
        common._settle_flow = settle
        setattr(sqlite_queueflow.SqliteQueueFlowStore, "gates_claims", gates)  # noqa: B010


class Queue:
    """One service on a fresh journal; ``cycle`` runs one task's life with ``fields``."""

    def __init__(self, label: str, fields: dict[str, Any], *, chain: bool = False) -> None:
        self.label = label
        self.root = _tmp()
        self.service = Service.open(self.root / "data", clock=FakeClock(START_MS))
        self.fields = fields
        self.chain = chain
        self.last: str | None = None
        self.n = 0
        if "concurrencyKey" in fields:
            self.service.dispatch(ADMIN, "agenttask.limit.set", {"key": "k", "max": 1000})
            held = self.service.dispatch(
                MEMBER, "agenttask.create", {"verb": "agent.run", "concurrencyKey": "other"}
            ).json()
            self.service.dispatch(HOLDER, "agenttask.claim", {"taskId": held["taskId"]})

    def create(self) -> str:
        self.n += 1
        body: dict[str, Any] = {"verb": "agent.run", "payload": {"n": self.n}, **self.fields}
        if "uniqueKey" in body:
            body["uniqueKey"] = f"u{self.n}"
        if self.chain and self.last is not None:
            body["after"] = [self.last]
        task: dict[str, Any] = self.service.dispatch(MEMBER, "agenttask.create", body).json()
        self.last = task["taskId"]
        return str(task["taskId"])

    def cycle(self) -> None:
        self.create()
        claim = self.service.dispatch(WORKER, "agenttask.claimNext", {}).json()
        body = {
            "taskId": claim["task"]["taskId"],
            "status": "DONE",
            "fence": claim["lease"]["fence"],
        }
        self.service.dispatch(WORKER, "agenttask.checkpoint", body)

    def close(self) -> None:
        self.service.close()
        shutil.rmtree(self.root)


def _rate(n: int, fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - started)


def _pair(
    a: Callable[[], None], b: Callable[[], None], n: int, rounds: int, *, a_off: bool = False
) -> tuple[float, float]:
    rates_a: list[float] = []
    rates_b: list[float] = []
    for _ in range(rounds):
        if a_off:
            with _hooks_off():
                rates_a.append(_rate(n, a))
        else:
            rates_a.append(_rate(n, a))
        rates_b.append(_rate(n, b))
    return statistics.median(rates_a), statistics.median(rates_b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--blocked", type=int, default=5000)
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    per_round = max(1, args.cycles // args.rounds)
    rows: list[tuple[str, float, float]] = []

    base, plain = Queue("hooks off", {}), Queue("plain", {})
    off, on = _pair(base.cycle, plain.cycle, per_round, args.rounds, a_off=True)
    rows.append(("plain cycle vs hooks off", on, off))
    keyed = Queue("keyed", {"concurrencyKey": "k"})
    p, k = _pair(plain.cycle, keyed.cycle, per_round, args.rounds)
    rows.append(("keyed cycle vs plain cycle", k, p))
    chained = Queue("after", {}, chain=True)
    p2, c = _pair(plain.cycle, chained.cycle, per_round, args.rounds)
    rows.append(("after cycle vs plain cycle", c, p2))
    unique = Queue("unique", {"uniqueKey": ""})
    pc, uc = _pair(plain.create, unique.create, per_round, args.rounds)  # type: ignore[arg-type]
    rows.append(("unique create vs plain create", uc, pc))
    for q in (base, plain, keyed, chained, unique):
        q.close()

    many, single = Queue("many", {}), Queue("single", {})
    batch = {"tasks": [{"verb": "agent.run", "payload": {"n": i}} for i in range(args.batch)]}

    def one_call() -> None:
        many.service.dispatch(MEMBER, "agenttask.createMany", batch)

    def separate() -> None:
        for _ in range(args.batch):
            single.create()

    m, s = _pair(one_call, separate, 1, max(2, args.rounds // 2))
    rows.append((f"createMany of {args.batch} vs {args.batch} creates", m, s))
    many.close()
    single.close()

    blocked = _claim_ms(args.blocked, args.probes)
    alone = _claim_ms(1, args.probes)
    rows.append((f"claimNext/s, {args.blocked} blocked ahead vs 1", 1000 / blocked, 1000 / alone))

    print(f"{'figure':44} {'rate/s':>10} {'baseline/s':>11} {'ratio':>7}")
    for label, rate, baseline in rows:
        print(f"{label:44} {rate:10.1f} {baseline:11.1f} {rate / baseline:7.2f}")


def _claim_ms(blocked: int, probes: int) -> float:
    """Median ``claimNext`` ms with ``blocked`` children of a leased parent ahead in line."""
    queue = Queue("blocked", {})
    service = queue.service
    parent = queue.create()
    service.dispatch(HOLDER, "agenttask.claim", {"taskId": parent})
    for start in range(0, blocked, 500):
        entry = {"verb": "agent.run", "after": [parent]}
        tasks = [entry] * min(500, blocked - start)
        service.dispatch(MEMBER, "agenttask.createMany", {"tasks": tasks})
    times = []
    for _ in range(probes):
        queue.create()
        started = time.perf_counter()
        claim = service.dispatch(WORKER, "agenttask.claimNext", {}).json()
        times.append((time.perf_counter() - started) * 1000)
        assert claim["claimed"], "the free task is claimable"
    queue.close()
    return statistics.median(times)


if __name__ == "__main__":
    main()
