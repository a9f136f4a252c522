"""The transition tables, and a model-based stateful test of the whole queue state machine.

The stateful test drives the real front door (``Service.dispatch`` on a temp journal with a
fake clock) with random sequences of create, claim, claimNext, checkpoint (renew, DONE,
FAILED; current, stale or no fence), release, escalate, approve, reject, cancel, requeue,
reorder and time passing. A small model predicts each outcome; after every step the stored
rows must agree with it and with the invariants: ``finished_at`` is set iff the status is
terminal, a task has at most one lease holder and the lease fields exist exactly when
``LEASED``, fences strictly increase, and a refused call writes nothing (except the runaway
guard's force-requeue).
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from taskcore import Actor, ErrorCode, FakeClock, Service, TaskError, Tier
from taskcore.limits import LEASE_DEFAULT_MS, LEASE_WALLCLOCK_CAP_SECONDS, MAX_LEASE_EXTENSIONS
from taskcore.queue.transitions import (
    GATE_TRANSITIONS,
    TASK_TRANSITIONS,
    GateAction,
    TaskAction,
    next_gate_status,
    next_status,
)
from taskcore.queue.types import GateStatus, TaskStatus

# -- the tables -----------------------------------------------------------------------------------


def test_terminal_statuses_allow_nothing_but_requeueing_a_failure():
    for status in TaskStatus:
        allowed = set(TASK_TRANSITIONS[status])
        if status is TaskStatus.FAILED:
            assert allowed == {TaskAction.REQUEUE}
        else:
            assert (allowed == set()) is status.terminal


@pytest.mark.parametrize("status", list(TaskStatus))
@pytest.mark.parametrize("action", list(TaskAction))
def test_every_missing_entry_is_an_illegal_transition(status, action):
    target = TASK_TRANSITIONS[status].get(action)
    if target is not None:
        assert next_status(status, action) is target
        return
    with pytest.raises(TaskError) as info:
        next_status(status, action)
    assert info.value.code is ErrorCode.ILLEGAL_TRANSITION
    assert info.value.code.kind.http_status == 409
    assert status.value in info.value.message


def test_only_checkpoint_reaches_done_and_only_the_lease_holder_states_reach_leased():
    into = {
        (status, action): target
        for status, row in TASK_TRANSITIONS.items()
        for action, target in row.items()
    }
    assert {k for k, v in into.items() if v is TaskStatus.DONE} == {
        (TaskStatus.LEASED, TaskAction.COMPLETE)
    }
    assert {k[0] for k, v in into.items() if v is TaskStatus.LEASED} == {
        TaskStatus.QUEUED,
        TaskStatus.LEASED,
    }


def test_an_approval_gate_is_decided_once_and_consumed_once():
    decided = {GateStatus.APPROVED, GateStatus.REJECTED, GateStatus.CONSUMED, GateStatus.VOIDED}
    for status in decided:
        for action in (GateAction.APPROVE, GateAction.REJECT):
            assert action not in GATE_TRANSITIONS[status]
    assert next_gate_status(GateStatus.APPROVED, GateAction.CONSUME) is GateStatus.CONSUMED
    assert GATE_TRANSITIONS[GateStatus.CONSUMED] == {}


# -- the model-based state machine ----------------------------------------------------------------

ADMIN = Actor(token_id="admin", workspace="w", tier=Tier.ADMIN, autonomy=3)
CREATOR = Actor(token_id="creator", workspace="w", tier=Tier.MEMBER, autonomy=2)
WORKERS = (
    Actor(token_id="w1", workspace="w", tier=Tier.AGENT, autonomy=1),
    Actor(token_id="w2", workspace="w", tier=Tier.AGENT, autonomy=1),
    Actor(token_id="hi", workspace="w", tier=Tier.AGENT, autonomy=3),  # above every ceiling
)
CAP_MS = LEASE_WALLCLOCK_CAP_SECONDS * 1000
TERMINAL = {"DONE", "FAILED", "CANCELLED"}


@attrs.define
class Model:
    """What the test believes about one task."""

    task_id: str
    status: str = "QUEUED"
    owner: str | None = None
    expires: int | None = None
    first: int | None = None
    extensions: int = 0
    fence: int = 0
    gate: str | None = None  # PENDING / APPROVED while it matters, else None
    gate_id: str | None = None

    def effective(self, now: int) -> str:
        if self.status == "LEASED" and self.expires is not None and now >= self.expires:
            return "QUEUED"
        return self.status

    def clear(self, status: str) -> None:
        self.status, self.owner, self.expires, self.first, self.extensions = (
            status,
            None,
            None,
            None,
            0,
        )


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.clock = FakeClock(1_700_000_000_000)
        self.service = Service.open(self.dir, clock=self.clock)
        self.tasks: list[Model] = []

    def teardown(self) -> None:
        self.service.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers ----------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def row(self, task_id: str) -> Any:
        with self.service.storage.read() as tx:
            return tx.queue.get_task("w", task_id)

    def call(self, actor: Actor, verb: str, body: dict[str, Any]) -> tuple[Any, ErrorCode | None]:
        try:
            result = self.service.dispatch(actor, verb, body).json(), None
        except TaskError as err:
            result = None, err.code
        event(f"{verb} -> {'OK' if result[1] is None else result[1].value}")
        return result

    def expect(self, task: Model, code: ErrorCode | None, want: ErrorCode | None, before: Any):
        assert code is want, (code, want)
        if code is not None and code is not ErrorCode.LEASE_RUNAWAY:
            assert self.row(task.task_id) == before, "a refusal wrote something"

    def pick(self, index: int) -> Model:
        return self.tasks[index % len(self.tasks)]

    def take_claim(self, task: Model, worker: Actor, result: dict[str, Any]) -> None:
        assert task.effective(self.now) == "QUEUED", "claimed a task that was not claimable"
        assert result["lease"]["fence"] == task.fence + 1, "fences must grow by one per claim"
        assert (result["lease"]["grant"] is not None) == (task.gate == "APPROVED")
        task.fence += 1
        task.status, task.owner = "LEASED", worker.token_id
        task.expires, task.first, task.extensions = self.now + LEASE_DEFAULT_MS, self.now, 0
        # an approved grant stays open across claims until agenttask.gate.apply uses it

    def holder_error(self, task: Model, actor: Actor, fence: int | None) -> ErrorCode | None:
        if fence is not None and fence != task.fence:
            return ErrorCode.STALE_FENCE
        eff = task.effective(self.now)
        if eff in TERMINAL:
            return ErrorCode.ILLEGAL_TRANSITION
        if eff != "LEASED" or task.owner != actor.token_id:
            return ErrorCode.LEASE_NOT_HELD
        return None

    def fence_arg(self, task: Model, choice: int) -> dict[str, int]:
        """No fence, the current one, a future one or an older one (fences start at 1)."""
        options = [None, task.fence, task.fence + 1, task.fence - 1]
        fence = options[choice]
        return {} if fence is None or fence < 1 else {"fence": fence}

    # -- rules ------------------------------------------------------------------------------
    @rule()
    def create(self) -> None:
        if len(self.tasks) >= 6:
            return
        result, code = self.call(CREATOR, "agenttask.create", {"verb": "agent.run"})
        assert code is None
        assert result["autonomyCeiling"] == CREATOR.autonomy
        self.tasks.append(Model(task_id=result["taskId"]))

    @precondition(lambda self: self.tasks)
    @rule(index=st.integers(0, 5), who=st.sampled_from(WORKERS))
    def claim(self, index: int, who: Actor) -> None:
        task = self.pick(index)
        before = self.row(task.task_id)
        result, code = self.call(who, "agenttask.claim", {"taskId": task.task_id})
        eff = task.effective(self.now)
        if eff == "LEASED":
            want = ErrorCode.CONFLICT
        elif eff != "QUEUED":
            want = ErrorCode.ILLEGAL_TRANSITION
        elif who.autonomy > CREATOR.autonomy:
            want = ErrorCode.AUTONOMY_EXCEEDED
        else:
            want = None
        self.expect(task, code, want, before)
        if code is None:
            self.take_claim(task, who, result)

    @rule(who=st.sampled_from(WORKERS))
    def claim_next(self, who: Actor) -> None:
        result, code = self.call(who, "agenttask.claimNext", {})
        assert code is None
        claimable = [
            t
            for t in self.tasks
            if t.effective(self.now) == "QUEUED" and who.autonomy <= CREATOR.autonomy
        ]
        if not claimable:
            assert result == {"claimed": False}
            return
        assert result["claimed"] is True
        task = next(t for t in self.tasks if t.task_id == result["task"]["taskId"])
        assert task in claimable
        self.take_claim(task, who, result)

    def do_checkpoint(
        self, task: Model, who: Actor, status: str | None, fence_arg: dict[str, int]
    ) -> None:
        before = self.row(task.task_id)
        body: dict[str, Any] = {"taskId": task.task_id, **fence_arg}
        if status:
            body["status"] = status
        result, code = self.call(who, "agenttask.checkpoint", body)
        want = self.holder_error(task, who, fence_arg.get("fence"))
        runaway = (
            want is None
            and status is None
            and (
                task.extensions + 1 > MAX_LEASE_EXTENSIONS or self.now - (task.first or 0) > CAP_MS
            )
        )
        self.expect(task, code, ErrorCode.LEASE_RUNAWAY if runaway else want, before)
        if runaway:
            task.clear("QUEUED")
        elif code is None and status:
            task.clear(status)
            assert result["finishedAtMs"] == self.now
        elif code is None:
            task.extensions += 1
            task.expires = self.now + LEASE_DEFAULT_MS
            assert result["lease"]["extensions"] == task.extensions

    @precondition(lambda self: self.tasks)
    @rule(
        index=st.integers(0, 5),
        who=st.sampled_from(WORKERS[:2]),
        status=st.sampled_from([None, None, "DONE", "FAILED"]),
        fence=st.integers(0, 3),
    )
    def checkpoint(self, index: int, who: Actor, status: str | None, fence: int) -> None:
        task = self.pick(index)
        self.do_checkpoint(task, who, status, self.fence_arg(task, fence))

    @precondition(lambda self: any(t.effective(self.now) == "LEASED" for t in self.tasks))
    @rule(index=st.integers(0, 5), status=st.sampled_from([None, None, None, None, "DONE"]))
    def heartbeat_by_the_holder(self, index: int, status: str | None) -> None:
        leased = [t for t in self.tasks if t.effective(self.now) == "LEASED"]
        task = leased[index % len(leased)]
        holder = next(w for w in WORKERS if w.token_id == task.owner)
        self.do_checkpoint(task, holder, status, {"fence": task.fence})

    @precondition(lambda self: self.tasks)
    @rule(index=st.integers(0, 5), who=st.sampled_from(WORKERS[:2]), fence=st.integers(0, 3))
    def release(self, index: int, who: Actor, fence: int) -> None:
        task = self.pick(index)
        before = self.row(task.task_id)
        fence_arg = self.fence_arg(task, fence)
        _, code = self.call(who, "agenttask.release", {"taskId": task.task_id, **fence_arg})
        self.expect(task, code, self.holder_error(task, who, fence_arg.get("fence")), before)
        if code is None:
            task.clear("QUEUED")

    @precondition(lambda self: self.tasks)
    @rule(index=st.integers(0, 5), who=st.sampled_from((CREATOR, *WORKERS[:2])))
    def escalate(self, index: int, who: Actor) -> None:
        task = self.pick(index)
        before = self.row(task.task_id)
        result, code = self.call(who, "agenttask.escalate", {"taskId": task.task_id})
        eff = task.effective(self.now)
        if eff == "LEASED" or (task.owner == who.token_id and task.status == "LEASED"):
            want = self.holder_error(task, who, None)
        elif eff == "QUEUED" and who is not CREATOR:
            want = ErrorCode.LEASE_NOT_HELD
        elif eff != "QUEUED":
            want = ErrorCode.ILLEGAL_TRANSITION
        else:
            want = None
        self.expect(task, code, want, before)
        if code is None:
            task.clear("ESCALATED")
            task.gate, task.gate_id = "PENDING", result["gate"]["gateId"]

    @precondition(lambda self: any(t.gate_id for t in self.tasks))
    @rule(index=st.integers(0, 5), approve=st.booleans())
    def decide(self, index: int, approve: bool) -> None:
        gated = [t for t in self.tasks if t.gate_id]
        task = gated[index % len(gated)]
        before = self.row(task.task_id)
        verb = "agenttask.gate.approve" if approve else "agenttask.gate.reject"
        _, code = self.call(ADMIN, verb, {"gateId": task.gate_id, "note": "decided"})
        pending = task.gate == "PENDING" and task.status == "ESCALATED"
        self.expect(task, code, None if pending else ErrorCode.ILLEGAL_TRANSITION, before)
        if code is None and approve:
            task.status, task.gate = "QUEUED", "APPROVED"
        elif code is None:
            task.clear("FAILED")
            task.gate = None

    @precondition(lambda self: self.tasks)
    @rule(index=st.integers(0, 5))
    def cancel(self, index: int) -> None:
        task = self.pick(index)
        before = self.row(task.task_id)
        _, code = self.call(CREATOR, "agenttask.cancel", {"taskId": task.task_id})
        terminal = task.effective(self.now) in TERMINAL
        self.expect(task, code, ErrorCode.ILLEGAL_TRANSITION if terminal else None, before)
        if code is None:
            task.clear("CANCELLED")
            task.gate = None

    @precondition(lambda self: self.tasks)
    @rule(index=st.integers(0, 5))
    def requeue(self, index: int) -> None:
        task = self.pick(index)
        before = self.row(task.task_id)
        _, code = self.call(CREATOR, "agenttask.requeue", {"taskId": task.task_id})
        failed = task.effective(self.now) == "FAILED"
        self.expect(task, code, None if failed else ErrorCode.ILLEGAL_TRANSITION, before)
        if code is None:
            task.clear("QUEUED")

    @precondition(lambda self: self.tasks)
    @rule(index=st.integers(0, 5), priority=st.integers(-3, 3))
    def reorder(self, index: int, priority: int) -> None:
        task = self.pick(index)
        before = self.row(task.task_id)
        body = {"taskId": task.task_id, "priority": priority}
        _, code = self.call(CREATOR, "agenttask.reorder", body)
        terminal = task.effective(self.now) in TERMINAL
        self.expect(task, code, ErrorCode.ILLEGAL_TRANSITION if terminal else None, before)

    @rule(ms=st.sampled_from([0, 1, 1000, LEASE_DEFAULT_MS - 1, LEASE_DEFAULT_MS, CAP_MS // 3]))
    def wait(self, ms: int) -> None:
        self.clock.advance(ms)

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def stored_rows_agree_with_the_model_and_the_invariants(self) -> None:
        for task in self.tasks:
            row = self.row(task.task_id)
            assert (row.finished_at_ms is not None) == (row.status in TERMINAL)
            assert (row.lease_owner is not None) == (row.status == "LEASED")
            assert (row.lease_expires_at_ms is not None) == (row.status == "LEASED")
            assert row.fence == task.fence
            view = self.service.dispatch(ADMIN, "agenttask.get", {"taskId": task.task_id}).json()
            assert view["status"] == task.effective(self.now)
            live = view["lease"]
            if task.effective(self.now) == "LEASED":
                assert live["owner"] == task.owner
                assert live["extensions"] == task.extensions
            else:
                assert live is None


_MACHINE_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# A plain test function, not hypothesis' unittest TestCase: the directory's autouse backend
# fixture cannot reach a TestCase.
@pytest.mark.backend_only(
    "sqlite",
    reason="each example opens a fresh journal in its own temp dir; the PostgreSQL test database "
    "is emptied once per test, not per example (the same verbs run on PostgreSQL in the other "
    "queue tests)",
)
def test_queue_state_machine() -> None:
    run_state_machine_as_test(QueueMachine, settings=_MACHINE_SETTINGS)
