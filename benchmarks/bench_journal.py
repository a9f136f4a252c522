"""Workflow journal throughput and scaling, each beside a same-run baseline.

1. claim + heartbeat + result cycles per second, in process, against a real journal file,
   beside plain apsw single-statement write transactions (``BEGIN IMMEDIATE; INSERT;
   COMMIT``) on a file with the same durability settings (WAL, ``synchronous=FULL``) in the
   same directory. A cycle is three durable transactions, so the ratio to compare is
   cycles/s x 3 against the baseline's transactions/s.
2. The cost of ``next`` and ``claim`` with 10^3, 10^4 and 10^5 retained tasks: the journal is
   filled through the real checkpoint path (one compiled checkpoint recorded for many Changes,
   some with unresolved attempts), then ``next`` + ``claim`` on a fresh Change are timed.

Run: ``.venv/bin/python benchmarks/bench_journal.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import attrs
from taskcore.actors import Actor, Tier
from taskcore.authority import (
    RequirementStep,
    WorkflowRequirement,
    install_requirement,
    register_profile,
    register_repository,
)
from taskcore.clock import SystemClock
from taskcore.contract import (
    ActionClass,
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    CriterionResult,
    GraphStatus,
    MutationAction,
    TaskClaimRequest,
    TaskCriterion,
    TaskMutationRequest,
    TaskResultAssertion,
    TrustClass,
    WorkflowProgression,
)
from taskcore.store import open_storage
from taskcore.workflow import ActorGuard, Caller, WorkflowJournal
from taskcore.workflow.types import CheckpointRequest, NextRequest

STEPS = 64
ACTOR = Actor(token_id="bench", workspace="bench", tier=Tier.AGENT)
AGENT = AgentIdentity(owner_id="bench", agent_id="bench")


def _git(repo: Path, *args: str) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    return (
        subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=env, check=True)
        .stdout.decode()
        .strip()
    )


def _requirement() -> WorkflowRequirement:
    crit = TaskCriterion(
        criterion="ok", description="ok", mode=CriterionMode.OBSERVATION_ELIGIBLE, required=True
    )
    return WorkflowRequirement(
        version=1,
        requirement_id="bench",
        summary="bench",
        steps=tuple(
            RequirementStep(
                step_id=f"s{i:02d}",
                summary="step",
                action_class=ActionClass.TEST,
                graph_status=GraphStatus.REQUIRED,
                progression=WorkflowProgression.AGENT_RESULT,
                depends_on=(),
                criteria=(crit,),
                references=(),
            )
            for i in range(STEPS)
        ),
    )


def _setup(root: Path) -> tuple[WorkflowJournal, Caller, str]:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("bench\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "bench")
    head = _git(repo, "rev-parse", "HEAD")
    storage = open_storage(root / "data", create=True)
    clock = SystemClock()
    register_repository(storage, clock, workspace="bench", repository_id="r", work_tree=repo)
    installed = install_requirement(storage, clock, repository_id="r", requirement=_requirement())
    register_profile(
        storage,
        clock,
        repository_id="r",
        profile_id="p",
        target="main",
        requirement_digest=installed.requirement_digest,
    )
    journal = WorkflowJournal(storage, clock=clock)
    caller = Caller(actor=ACTOR, repository_id="r", profile_id="p", guard=ActorGuard(ACTOR))
    return journal, caller, head


class Filler:
    """Records one compiled checkpoint for many Changes (the real record path, git once)."""

    def __init__(self, journal: WorkflowJournal, caller: Caller, head: str) -> None:
        self.journal = journal
        self.caller = caller
        self.compiled = journal.compile_checkpoint(
            caller, CheckpointRequest(version=1, change_id="seed", commit=head, context="")
        )
        self.n = 0

    def change(self) -> list[tuple[str, str]]:
        self.n += 1
        compiled = attrs.evolve(self.compiled, change_id=f"change-{self.n}")
        response = self.journal.record_checkpoint(self.caller, compiled)
        return [(t.task_id, t.task_digest) for t in response.tasks]


def _claim(
    journal: WorkflowJournal, caller: Caller, task_id: str, digest: str, rid: str
) -> dict[str, Any]:
    raw = journal.claim(
        caller,
        TaskClaimRequest(
            version=1,
            request_id=rid,
            task_id=task_id,
            task_digest=digest,
            execution_operation_id=rid,
            requested_lease_ms=600_000,
            executor=None,
        ),
    )
    result: dict[str, Any] = json.loads(raw)
    return result


def bench_cycles(
    root: Path, cycles: int, on_start: Callable[[], None] | None = None
) -> tuple[float, float]:
    journal, caller, head = _setup(root)
    filler = Filler(journal, caller, head)
    tasks = []
    while len(tasks) < cycles:
        tasks.extend(filler.change())
    if on_start is not None:  # run_all counts the statements of the timed cycles from here
        on_start()
    start = time.perf_counter()
    for i, (task_id, digest) in enumerate(tasks[:cycles]):
        claimed = _claim(journal, caller, task_id, digest, f"c{i}")
        a = claimed["attempt"]
        journal.heartbeat(
            caller,
            TaskMutationRequest(
                version=1,
                request_id=f"h{i}",
                action=MutationAction.HEARTBEAT,
                task_id=task_id,
                task_digest=digest,
                attempt_id=a["attempt_id"],
                attempt_digest=claimed["attempt_digest"],
                execution_operation_id=a["execution_operation_id"],
                executor=None,
                fence=a["fence"],
                reason=None,
            ),
        )
        journal.result(
            caller,
            TaskResultAssertion(
                version=1,
                task_id=task_id,
                task_digest=digest,
                attempt_id=a["attempt_id"],
                attempt_digest=claimed["attempt_digest"],
                request_id=f"r{i}",
                execution_operation_id=a["execution_operation_id"],
                agent=AGENT,
                executor=None,
                fence=a["fence"],
                trust_class=TrustClass.AGENT_ASSERTION,
                outcome=AssertionOutcome.PASSED,
                criteria=(
                    CriterionResult(
                        criterion="ok",
                        outcome=CriterionOutcome.PASSED,
                        findings=(),
                        evidence_digests=(),
                    ),
                ),
                executor_provenance=None,
            ),
        )
    elapsed = time.perf_counter() - start
    journal.storage.close()
    return cycles / elapsed, elapsed


def bench_baseline(root: Path, count: int) -> float:
    conn = apsw.Connection(str(root / "baseline.sqlite"))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    body = b"x" * 512
    start = time.perf_counter()
    for _ in range(count):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t(body) VALUES (?)", (body,))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return count / elapsed


def bench_scaling(root: Path, sizes: list[int], samples: int) -> list[tuple[int, float, float]]:
    journal, caller, head = _setup(root)
    filler = Filler(journal, caller, head)
    retained = 0
    out = []
    for size in sizes:
        while retained < size:
            tasks = filler.change()
            retained += len(tasks)
            if filler.n % 10 == 0:  # leave some older attempts unresolved
                task_id, digest = tasks[0]
                _claim(journal, caller, task_id, digest, f"fill-{filler.n}")
        with journal.storage.read() as tx:
            count = tx.journal.count_tasks()
        next_ms, claim_ms = [], []
        for s in range(samples):
            fresh = filler.change()
            retained += len(fresh)
            t0 = time.perf_counter()
            offered = journal.next(caller, NextRequest(version=1, change_id=f"change-{filler.n}"))
            t1 = time.perf_counter()
            assert offered.task is not None
            _claim(journal, caller, offered.task.task_id, offered.task_digest, f"s{size}-{s}")
            t2 = time.perf_counter()
            next_ms.append((t1 - t0) * 1000)
            claim_ms.append((t2 - t1) * 1000)
        out.append((count, statistics.median(next_ms), statistics.median(claim_ms)))
    journal.storage.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs (smoke)")
    args = parser.parse_args()
    cycles = 100 if args.quick else 400
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a").mkdir()
        (root / "b").mkdir()
        baseline = bench_baseline(root, cycles * 3)
        rate, elapsed = bench_cycles(root / "a", cycles)
        print(
            f"machine: {os.uname().sysname} {os.uname().machine}, {os.cpu_count()} cores, python {sys.version.split()[0]}, sqlite {apsw.sqlite_lib_version()}"
        )
        print(f"baseline: {baseline:,.0f} single-statement durable write transactions/s")
        print(
            f"journal: {rate:,.1f} claim+heartbeat+result cycles/s ({cycles} cycles in {elapsed:.2f} s)"
        )
        print(f"ratio: journal transactions/s (cycles x 3) / baseline = {rate * 3 / baseline:.2f}")
        print("retained tasks | next median ms | claim median ms")
        rows = bench_scaling(root / "b", sizes, samples=20)
        for count, next_ms, claim_ms in rows:
            print(f"{count:>14,} | {next_ms:>14.2f} | {claim_ms:>15.2f}")
        first, last = rows[0], rows[-1]
        print(
            f"growth {first[0]:,} -> {last[0]:,} tasks: next x{last[1] / first[1]:.2f}, "
            f"claim x{last[2] / first[2]:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
