"""SIGKILL a child in the middle of claims, heartbeats and results, fifty times.

The child logs each request durably *before* sending it and each acknowledged outcome
durably *after* the journal returned it. After every kill the parent reopens the journal and
checks: the file passes a full integrity check; every acknowledged mutation is retained with
exactly the acknowledged bytes; and resending every request of that run (the one in flight
included) returns exactly the retained outcome or a conclusive refusal, never a storage or
internal error.
"""

import base64
import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest
from taskcore.codec import Codec
from taskcore.contract import (
    MutationAction,
    TaskClaimRequest,
    TaskMutationRequest,
    TaskResultAssertion,
    WorkflowTask,
)
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

KILLS = 50
CHANGES = 40
CONCLUSIVE = {
    ErrorCode.ILLEGAL_TRANSITION,
    ErrorCode.STALE_FENCE,
    ErrorCode.NOT_FOUND,
    ErrorCode.IDEMPOTENCY_CONFLICT,
}
TYPES = {"claim": TaskClaimRequest, "result": TaskResultAssertion}


def _journal(data_dir: Path) -> tuple[WorkflowJournal, Caller]:
    storage = open_storage(data_dir)
    who = actor("crasher")
    caller = Caller(actor=who, repository_id=REPO, profile_id=PROFILE, guard=ActorGuard(who))
    return WorkflowJournal(storage), caller


def _call(journal: WorkflowJournal, caller: Caller, kind: str, request) -> bytes:
    method = {
        "claim": journal.claim,
        "heartbeat": journal.heartbeat,
        "reconcile": journal.reconcile,
        "result": journal.result,
    }[kind]
    return method(caller, request)


def _child(data_dir: str, tasks_json: str, log_path: str, seed: int) -> None:
    codec = Codec()
    tasks = [codec.decode(WorkflowTask, t) for t in json.loads(tasks_json)]
    journal, caller = _journal(Path(data_dir))
    rng = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def log(entry: dict) -> None:
        os.write(fd, (json.dumps(entry) + "\n").encode())
        os.fsync(fd)

    def send(kind: str, request_id: str, request) -> bytes | None:
        log(
            {
                "phase": "sent",
                "kind": kind,
                "id": request_id,
                "request": codec.dumps(request).decode(),
            }
        )
        try:
            raw = _call(journal, caller, kind, request)
        except TaskError:
            return None
        log(
            {
                "phase": "ack",
                "kind": kind,
                "id": request_id,
                "outcome": base64.b64encode(raw).decode(),
            }
        )
        return raw

    n = 0
    while True:
        task = rng.choice(tasks)
        n += 1
        tag = f"{seed}-{n}"
        raw = send("claim", f"claim-{tag}", claim_request(task, f"claim-{tag}", op=f"op-{tag}"))
        if raw is None:
            continue
        claimed = parse(raw)
        for beat in range(2):
            send(
                "heartbeat",
                f"hb-{tag}-{beat}",
                mutation(claimed, MutationAction.HEARTBEAT, f"hb-{tag}-{beat}"),
            )
        if rng.random() < 0.04:
            send("result", f"res-{tag}", result_for(claimed, task, f"res-{tag}", who=caller.actor))
        else:
            send(
                "reconcile",
                f"rec-{tag}",
                mutation(claimed, MutationAction.RECONCILE, f"rec-{tag}", reason="crash test"),
            )


def _wait_until_started(log_path: Path, child: multiprocessing.process.BaseProcess) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.is_alive():
        if log_path.exists() and log_path.stat().st_size > 0:
            return
        time.sleep(0.005)
    raise AssertionError(f"the child logged no request within 60 s (alive: {child.is_alive()})")


def _resend(journal: WorkflowJournal, caller: Caller, kind: str, request) -> bytes | ErrorCode:
    try:
        return _call(journal, caller, kind, request)
    except TaskError as err:
        return err.code


def _decode(codec: Codec, kind: str, text: str):
    return codec.decode(TYPES.get(kind, TaskMutationRequest), text)


@pytest.mark.slow
def test_sigkill_at_random_points_never_loses_or_changes_an_acknowledged_outcome(tmp_path: Path):
    world = make_world(tmp_path)
    tasks = [world.task(world.checkpoint(f"change-{c}"), "implement") for c in range(CHANGES)]
    world.close()
    codec = Codec()
    tasks_json = json.dumps([codec.dumps(t).decode() for t in tasks])
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(1234)
    acked_total: dict[str, bytes] = {}
    for run in range(KILLS):
        log_path = tmp_path / f"run-{run}.log"
        child = ctx.Process(
            target=_child, args=(str(world.data_dir), tasks_json, str(log_path), run)
        )
        child.start()
        # The kill lands at a random point of the child's work, counted from its first logged
        # request (on a loaded machine, or PostgreSQL, opening the journal alone can take
        # longer than the window, and the kill then proved nothing).
        _wait_until_started(log_path, child)
        time.sleep(rng.uniform(0.05, 0.35))
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        assert child.exitcode == -signal.SIGKILL

        text = log_path.read_text() if log_path.exists() else ""  # killed before it began
        entries = [json.loads(line) for line in text.splitlines() if line.endswith("}")]
        sent = {e["id"]: e for e in entries if e["phase"] == "sent"}
        acked = {e["id"]: base64.b64decode(e["outcome"]) for e in entries if e["phase"] == "ack"}
        acked_total.update(acked)

        journal, caller = _journal(world.data_dir)
        try:
            with journal.storage.read() as tx:
                assert tx.journal.integrity_errors() == ()
                for request_id, outcome in acked_total.items():
                    row = tx.journal.get_request("acme", "crasher", request_id)
                    assert row is not None
                    assert row.outcome == outcome
            for request_id, entry in sent.items():
                request = _decode(codec, entry["kind"], entry["request"])
                again = _resend(journal, caller, entry["kind"], request)
                if isinstance(again, ErrorCode):
                    assert request_id not in acked
                    assert again in CONCLUSIVE
                    continue
                if request_id in acked:
                    assert again == acked[request_id]
                with journal.storage.read() as tx:
                    assert tx.journal.get_request("acme", "crasher", request_id).outcome == again
        finally:
            journal.storage.close()
    assert len(acked_total) > KILLS  # the children got real work acknowledged between kills
