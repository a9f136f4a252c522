"""Eight processes race to claim the same tasks and resend their requests.

Workers come in pairs sharing one agent identity and one deterministic request stream, so
the same request ID is sent by two processes at once. The journal must give exactly one
attempt per fence, fences distinct and increasing per task, and every request ID exactly one
outcome, byte for byte, however often and from wherever it is resent.
"""

import itertools
import json
import multiprocessing
import random
from pathlib import Path

import pytest
from taskcore.clock import SystemClock
from taskcore.codec import Codec
from taskcore.contract import MutationAction
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.workflow import ActorGuard, Caller, WorkflowJournal

from tests.taskcore.workflow.support import (
    PROFILE,
    REPO,
    actor,
    claim_request,
    make_world,
    mutation,
    parse,
    result_for,
)

WORKERS = 8
CHANGES = 4
ROUNDS = 6
CONCLUSIVE = {
    ErrorCode.ILLEGAL_TRANSITION,
    ErrorCode.STALE_FENCE,
    ErrorCode.FORBIDDEN,
    ErrorCode.BINDING_MISMATCH,
    ErrorCode.NOT_FOUND,
    ErrorCode.IDEMPOTENCY_CONFLICT,
}


def _worker(data_dir: str, tasks_json: str, worker: int, out_path: str) -> None:
    from taskcore.contract import WorkflowTask

    codec = Codec()
    tasks = [codec.decode(WorkflowTask, t) for t in json.loads(tasks_json)]
    storage = open_storage(data_dir)
    journal = WorkflowJournal(storage, clock=SystemClock())
    who = actor(f"agent{worker // 2}")
    caller = Caller(actor=who, repository_id=REPO, profile_id=PROFILE, guard=ActorGuard(who))
    rng = random.Random(worker // 2)  # both workers of a pair make the same choices
    seen: dict[str, list[str]] = {}
    errors: list[str] = []

    def send(request_id: str, call, request) -> bytes | None:
        try:
            raw = call(caller, request)
        except TaskError as err:
            errors.append(err.code.value)
            if err.code not in CONCLUSIVE:
                raise
            return None
        seen.setdefault(request_id, []).append(raw.decode())
        # An immediate resend must answer the same bytes.
        seen[request_id].append(call(caller, request).decode())
        return raw

    for rnd in range(ROUNDS):
        order = list(range(len(tasks)))
        rng.shuffle(order)
        for index in order:
            task = tasks[index]
            tag = f"{worker // 2}-{index}-{rnd}"
            raw = send(
                f"claim-{tag}", journal.claim, claim_request(task, f"claim-{tag}", op=f"op-{tag}")
            )
            if raw is None:
                continue
            claimed = parse(raw)
            send(
                f"hb-{tag}",
                journal.heartbeat,
                mutation(claimed, MutationAction.HEARTBEAT, f"hb-{tag}"),
            )
            if rng.random() < 0.15:
                send(f"res-{tag}", journal.result, result_for(claimed, task, f"res-{tag}", who=who))
            else:
                request = mutation(claimed, MutationAction.RECONCILE, f"rec-{tag}", reason="race")
                send(f"rec-{tag}", journal.reconcile, request)
    storage.close()
    Path(out_path).write_text(json.dumps({"seen": seen, "errors": errors, "agent": who.agent_id}))


@pytest.mark.slow
def test_eight_processes_racing_claims_and_retries_keep_fences_and_outcomes(tmp_path: Path):
    world = make_world(tmp_path)
    tasks = []
    for c in range(CHANGES):
        response = world.checkpoint(f"change-{c}")
        tasks.append(world.task(response, "implement"))
    world.close()
    codec = Codec()
    tasks_json = json.dumps([codec.dumps(t).decode() for t in tasks])
    ctx = multiprocessing.get_context("fork")
    outs = [tmp_path / f"worker-{w}.json" for w in range(WORKERS)]
    procs = [
        ctx.Process(target=_worker, args=(str(world.data_dir), tasks_json, w, str(outs[w])))
        for w in range(WORKERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(240)
    assert [p.exitcode for p in procs] == [0] * WORKERS

    # Every request ID has exactly one outcome, whoever sent it and however often.
    by_scope: dict[tuple[str, str], set[str]] = {}
    refusals: list[str] = []
    for out in outs:
        report = json.loads(out.read_text())
        refusals.extend(report["errors"])
        for request_id, answers in report["seen"].items():
            by_scope.setdefault((report["agent"], request_id), set()).update(answers)
    assert by_scope
    assert all(len(answers) == 1 for answers in by_scope.values())
    assert "ILLEGAL_TRANSITION" in refusals  # the race was real: claims collided

    storage = open_storage(world.data_dir)
    try:
        with storage.read() as tx:
            assert tx.journal.integrity_errors() == ()
            total_attempts = 0
            for task in tasks:
                attempts = tx.journal.attempts_of_task(task.task_id)
                fences = [a.fence for a in attempts]
                assert fences == list(range(1, len(fences) + 1))
                for older, newer in itertools.pairwise(attempts):
                    assert older.state == "replaced"
                    assert older.superseded_by_fence == newer.fence
                record = tx.journal.get_task(task.task_id)
                assert record.next_fence == len(fences) + 1
                total_attempts += len(attempts)
                for a in attempts:
                    row = tx.journal.get_request(
                        a.owner_id, a.agent_id, json.loads(a.body)["claim_request_id"]
                    )
                    assert parse(row.outcome)["attempt"]["fence"] == a.fence
            # Each committed claim is one attempt: outcomes seen by workers name real attempts.
            assert total_attempts > len(tasks)  # reconciliation produced later fences
            claims = {k: v for k, v in by_scope.items() if k[1].startswith("claim-")}
            assert total_attempts == len(claims)
            for (_, _), answers in claims.items():
                attempt = parse(next(iter(answers)).encode())["attempt"]
                stored = tx.journal.get_attempt(attempt["attempt_id"])
                assert stored.fence == attempt["fence"]
    finally:
        storage.close()
