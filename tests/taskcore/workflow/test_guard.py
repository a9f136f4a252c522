"""The authorization guard: consulted for every selection, read and transition, in lock order."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from taskcore.actors import Actor, Tier
from taskcore.auth import issue_token, revoke_token
from taskcore.contract import InstructionsRequest, MutationAction, TaskStatusRequest
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.workflow import ActorGuard, Caller, GuardAction, WorkflowJournal
from taskcore.workflow.guard import GuardRequest, workspace_lock
from taskcore.workflow.types import NextRequest, RequirementsRequest

from tests.taskcore.workflow.support import (
    PROFILE,
    REPO,
    actor,
    claim_request,
    mutation,
    parse,
    result_for,
)


class RecordingStorage:
    def __init__(self, inner, events):
        self.inner = inner
        self.events = events

    @contextmanager
    def write(self) -> Iterator[object]:
        self.events.append("tx-begin")
        with self.inner.write() as tx:
            yield tx
        self.events.append("tx-end")

    @contextmanager
    def read(self) -> Iterator[object]:
        self.events.append("read-begin")
        with self.inner.read() as tx:
            yield tx
        self.events.append("read-end")

    def ping(self) -> None:
        self.inner.ping()

    def close(self) -> None:
        self.inner.close()


class RecordingGuard:
    def __init__(self, events, refuse: set[GuardAction] | None = None):
        self.events = events
        self.refuse = refuse or set()

    @contextmanager
    def _hold(self, action):
        self.events.append(f"hold:{action.value}")
        yield
        self.events.append("release")

    def hold(self, action):
        return self._hold(action)

    def check(self, tx, request: GuardRequest):
        self.events.append(f"check:{request.action.value}")
        if request.action in self.refuse:
            raise TaskError(ErrorCode.AUTHORIZATION_CHANGED, "refused by the test guard")


def _recording(world, refuse=None):
    events: list[str] = []
    journal = WorkflowJournal(RecordingStorage(world.storage, events), clock=world.clock)
    caller = Caller(
        actor=actor(), repository_id=REPO, profile_id=PROFILE, guard=RecordingGuard(events, refuse)
    )
    return journal, caller, events


def test_transition_takes_guard_then_transaction_then_checks_inside(world):
    cp = world.checkpoint()
    journal, caller, events = _recording(world)
    journal.claim(caller, claim_request(world.task(cp, "implement")))
    assert events == ["hold:claim", "tx-begin", "check:claim", "tx-end", "release"]


def test_every_operation_consults_the_guard(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    journal, caller, events = _recording(world)
    claimed = parse(journal.claim(caller, claim_request(task)))
    journal.heartbeat(caller, mutation(claimed, MutationAction.HEARTBEAT, "hb"))
    journal.status(
        caller,
        TaskStatusRequest(
            version=1,
            task_id=task.task_id,
            task_digest=task.digest,
            attempt_id=claimed["attempt"]["attempt_id"],
        ),
    )
    journal.next(caller, NextRequest(version=1, change_id="c1"))
    journal.requirements(caller, RequirementsRequest(version=1, change_id="c1"))
    journal.instructions(
        caller,
        InstructionsRequest(
            version=1, task_id=task.task_id, task_digest=task.digest, supported_schema_versions=(1,)
        ),
    )
    journal.result(caller, result_for(claimed, task))
    checks = [e for e in events if e.startswith("check:")]
    assert checks == [
        "check:claim",
        "check:heartbeat",
        "check:read",
        "check:select",
        "check:read",
        "check:read",
        "check:result",
    ]
    assert events.count("hold:read") == 0  # reads take no lock, only the check


def test_refusing_guard_writes_nothing_and_binds_no_request_id(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    journal, caller, _ = _recording(world, refuse={GuardAction.CLAIM})
    with pytest.raises(TaskError) as info:
        journal.claim(caller, claim_request(task))
    assert info.value.code is ErrorCode.AUTHORIZATION_CHANGED
    with world.storage.read() as tx:
        assert tx.journal.get_task(task.task_id).state == "pending"
        assert tx.journal.get_request("acme", "agent1", "claim-1") is None


def test_retained_retry_is_still_reauthorized(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    world.journal.claim(world.caller(), claim_request(task))
    journal, caller, _ = _recording(world, refuse={GuardAction.CLAIM})
    with pytest.raises(TaskError):
        journal.claim(caller, claim_request(task))


def test_workspace_contention_fails_closed_without_replay(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    who = actor()
    impatient = Caller(
        actor=who, repository_id=REPO, profile_id=PROFILE, guard=ActorGuard(who, wait_ms=50)
    )
    lock = workspace_lock(who.workspace)
    held = threading.Event()
    done = threading.Event()

    def holder() -> None:
        with lock:
            held.set()
            done.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5)
    try:
        with pytest.raises(TaskError) as info:
            world.journal.claim(impatient, claim_request(task))
        assert info.value.code is ErrorCode.BUSY
    finally:
        done.set()
        thread.join()
    with world.storage.read() as tx:
        assert tx.journal.get_request("acme", "agent1", "claim-1") is None
    assert parse(world.journal.claim(impatient, claim_request(task)))["attempt"]["fence"] == 1


def test_journal_writer_contention_fails_closed_with_busy(world):
    cp = world.checkpoint()
    task = world.task(cp, "implement")
    other = open_storage(world.data_dir, busy_timeout_ms=50)
    journal = WorkflowJournal(other, clock=world.clock)
    try:
        with world.storage.write(), pytest.raises(TaskError) as info:
            journal.claim(world.caller(), claim_request(task))
        assert info.value.code is ErrorCode.BUSY
        with world.storage.read() as tx:
            assert tx.journal.get_task(task.task_id).state == "pending"
    finally:
        other.close()


def test_revoked_token_is_refused_inside_the_transition(world):
    cp = world.checkpoint()
    issued = issue_token(world.storage, world.clock, workspace="acme", tier=Tier.AGENT)
    who = Actor(token_id=issued.record.token_id, workspace="acme", tier=Tier.AGENT)
    revoke_token(world.storage, world.clock, issued.record.token_id)
    with pytest.raises(TaskError) as info:
        world.journal.claim(world.caller(who), claim_request(world.task(cp, "implement")))
    assert info.value.code is ErrorCode.TOKEN_REVOKED
