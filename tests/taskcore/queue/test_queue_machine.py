"""The queue as a state machine, against a real journal, on both backends (hypothesis).

Random interleavings of create, ``claimNext`` (at once, and with a short ``waitMs``),
checkpoint ``DONE`` / ``FAILED``, release, requeue, cancel, lease expiry (the test clock
moved past a lease) and pausing / resuming the carrier verb run through ``Service.dispatch``,
against a model of what each task is.
After every step:

* **one holder**: no task is leased to two holders: each worker's ``agenttask.leases`` lists
  exactly the tasks the model has it hold, and no task is in two workers' lists;
* **terminal states are final**: a task that reached ``DONE`` or ``CANCELLED`` reads so for
  the rest of the run (``FAILED`` leaves only by ``agenttask.requeue``, the seed's one exit);
* **reads agree with the model**: ``agenttask.get`` (effective status, fence, lease owner) and
  ``agenttask.list`` (per status) of every task.

Adding a rule (dependencies, keys; pause/resume was added so): write the ``@rule`` that calls
the new verb and updates the model; put what makes a task unclaimable in
:meth:`QueueModel.claimable` (``claimNext`` and its waiting form are checked against it), and
what a read should show in an ``@invariant``. The existing rules stay as they are.

On PostgreSQL every example runs in a workspace of its own on the test's one database (the
database is emptied per test, not per example); on SQLite likewise in the test's journal.
The single-task verb table (claim by id, heartbeats, escalation, gates, reorder, the runaway
guard) has its own machine in test_transitions.py.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any, ClassVar

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
from taskcore.limits import LEASE_DEFAULT_MS

from tests.taskcore.queue.support import START_MS

TERMINAL = frozenset({"DONE", "FAILED", "CANCELLED"})
FINAL = frozenset({"DONE", "CANCELLED"})
MAX_TASKS = 8


@attrs.define
class TaskModel:
    """What the test believes about one task."""

    task_id: str
    verb: str = "agent.run"
    status: str = "QUEUED"
    holder: str | None = None
    expires: int | None = None
    fence: int = 0

    def effective(self, now: int) -> str:
        """The status a read shows: an expired lease reads ``QUEUED``."""
        if self.status == "LEASED" and self.expires is not None and now >= self.expires:
            return "QUEUED"
        return self.status

    def held_by(self, now: int) -> str | None:
        return self.holder if self.effective(now) == "LEASED" else None

    def settle(self, status: str) -> None:
        self.status, self.holder, self.expires = status, None, None


@attrs.define
class QueueModel:
    """The tasks of one workspace as the test believes them, and the one claimability rule."""

    clock: FakeClock
    tasks: list[TaskModel] = attrs.Factory(list)
    finished: dict[str, str] = attrs.Factory(dict)
    """Task id -> the final status it reached (``DONE`` / ``CANCELLED``)."""
    paused: set[str] = attrs.Factory(set)
    """Carrier verbs paused (``agenttask.pause``): none of their tasks is handed out."""

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def find(self, task_id: str) -> TaskModel:
        return next(t for t in self.tasks if t.task_id == task_id)

    def claimable(self, task: TaskModel) -> bool:
        """Whether ``claimNext`` may hand ``task`` out now (new unclaimable reasons go here)."""
        return task.effective(self.now) == "QUEUED" and task.verb not in self.paused

    def next_claim(self) -> TaskModel | None:
        """The task ``claimNext`` hands out: equal priorities, so the oldest claimable one."""
        return next((t for t in self.tasks if self.claimable(t)), None)

    def holder_error(self, task: TaskModel, actor: Actor) -> ErrorCode | None:
        """The refusal of a holder's verb (checkpoint, release) by ``actor`` at the fence."""
        eff = task.effective(self.now)
        if eff in TERMINAL:
            return ErrorCode.ILLEGAL_TRANSITION
        if eff != "LEASED" or task.holder != actor.token_id:
            return ErrorCode.LEASE_NOT_HELD
        return None

    def settle(self, task: TaskModel, status: str) -> None:
        assert task.task_id not in self.finished, "a final task changed"
        task.settle(status)
        if status in FINAL:
            self.finished[task.task_id] = status


class QueueMachine(RuleBasedStateMachine):
    """Rules: the queue verbs; invariants: one holder, final states, reads = model."""

    service: ClassVar[Service]
    clock: ClassVar[FakeClock]

    def __init__(self) -> None:
        super().__init__()
        ws = f"m{uuid.uuid4().hex[:12]}"
        self.ws = ws
        self.creator = Actor(token_id=f"{ws}-creator", workspace=ws, tier=Tier.MEMBER, autonomy=2)
        self.admin = Actor(token_id=f"{ws}-admin", workspace=ws, tier=Tier.ADMIN, autonomy=3)
        self.workers = tuple(
            Actor(token_id=f"{ws}-w{i}", workspace=ws, tier=Tier.AGENT, autonomy=1)
            for i in range(3)
        )
        self.model = QueueModel(self.clock)

    # -- helpers ----------------------------------------------------------------------------
    def call(self, actor: Actor, verb: str, body: dict[str, Any]) -> tuple[Any, ErrorCode | None]:
        try:
            out: tuple[Any, ErrorCode | None] = (
                self.service.dispatch(actor, verb, body).json(),
                None,
            )
        except TaskError as err:
            out = None, err.code
        event(f"{verb} -> {'OK' if out[1] is None else out[1].value}")
        return out

    def pick(self, index: int) -> TaskModel:
        return self.model.tasks[index % len(self.model.tasks)]

    def took(self, task: TaskModel, worker: Actor, answer: dict[str, Any]) -> None:
        """``worker`` was handed ``task``: it must have been claimable, held by nobody."""
        model = self.model
        assert model.claimable(task), "handed out a task that was not claimable"
        assert task.held_by(model.now) is None, "a task handed to a second holder"
        assert answer["lease"]["fence"] == task.fence + 1
        assert answer["lease"]["owner"] == worker.token_id
        task.fence += 1
        task.status, task.holder = "LEASED", worker.token_id
        task.expires = model.now + LEASE_DEFAULT_MS

    # -- rules ------------------------------------------------------------------------------
    @precondition(lambda self: len(self.model.tasks) < MAX_TASKS)
    @rule()
    def create(self) -> None:
        answer, code = self.call(self.creator, "agenttask.create", {"verb": "agent.run"})
        assert code is None
        assert answer["status"] == "QUEUED"
        self.model.tasks.append(TaskModel(task_id=answer["taskId"]))
        self.clock.advance(1)  # distinct creation times: claimNext's order is the model's

    @rule(worker=st.integers(0, 2), wait_ms=st.sampled_from([None, None, 1]))
    def claim_next(self, worker: int, wait_ms: int | None) -> None:
        who = self.workers[worker]
        body = {} if wait_ms is None else {"waitMs": wait_ms}
        answer, code = self.call(who, "agenttask.claimNext", body)
        assert code is None
        want = self.model.next_claim()
        if want is None:
            assert answer == {"claimed": False}
            return
        assert answer["claimed"] is True
        assert answer["task"]["taskId"] == want.task_id
        self.took(want, who, answer)

    @precondition(lambda self: self.model.tasks)
    @rule(
        index=st.integers(0, MAX_TASKS - 1),
        worker=st.integers(0, 2),
        status=st.sampled_from(["DONE", "FAILED"]),
        holder=st.booleans(),
    )
    def finish(self, index: int, worker: int, status: str, holder: bool) -> None:
        """A checkpoint ``DONE``/``FAILED``: by the holder at its fence, or by anyone else."""
        task = self.pick(index)
        who = self.workers[worker]
        body: dict[str, Any] = {"taskId": task.task_id, "status": status}
        if holder and task.held_by(self.model.now) is not None:
            who = next(w for w in self.workers if w.token_id == task.holder)
            body["fence"] = task.fence
        answer, code = self.call(who, "agenttask.checkpoint", body)
        assert code is self.model.holder_error(task, who), code
        if code is None:
            assert answer["status"] == status
            self.model.settle(task, status)

    @precondition(lambda self: self.model.tasks)
    @rule(index=st.integers(0, MAX_TASKS - 1), worker=st.integers(0, 2), holder=st.booleans())
    def release(self, index: int, worker: int, holder: bool) -> None:
        task = self.pick(index)
        who = self.workers[worker]
        if holder and task.held_by(self.model.now) is not None:
            who = next(w for w in self.workers if w.token_id == task.holder)
        _, code = self.call(who, "agenttask.release", {"taskId": task.task_id})
        assert code is self.model.holder_error(task, who), code
        if code is None:
            self.model.settle(task, "QUEUED")

    @precondition(lambda self: self.model.tasks)
    @rule(index=st.integers(0, MAX_TASKS - 1))
    def requeue(self, index: int) -> None:
        task = self.pick(index)
        _, code = self.call(self.creator, "agenttask.requeue", {"taskId": task.task_id})
        failed = task.effective(self.model.now) == "FAILED"
        assert code is (None if failed else ErrorCode.ILLEGAL_TRANSITION), code
        if code is None:
            self.model.settle(task, "QUEUED")

    @precondition(lambda self: self.model.tasks)
    @rule(index=st.integers(0, MAX_TASKS - 1))
    def cancel(self, index: int) -> None:
        task = self.pick(index)
        _, code = self.call(self.creator, "agenttask.cancel", {"taskId": task.task_id})
        terminal = task.effective(self.model.now) in TERMINAL
        assert code is (ErrorCode.ILLEGAL_TRANSITION if terminal else None), code
        if code is None:
            self.model.settle(task, "CANCELLED")

    @rule(pause=st.booleans())
    def pause_or_resume(self, pause: bool) -> None:
        """An admin pauses or resumes the carrier verb (idempotent; held leases stay held)."""
        verb = "agenttask.pause" if pause else "agenttask.resume"
        answer, code = self.call(self.admin, verb, {"verb": "agent.run"})
        assert code is None
        assert answer["paused"] is pause
        assert answer["changed"] is (pause != ("agent.run" in self.model.paused))
        if pause:
            self.model.paused.add("agent.run")
        else:
            self.model.paused.discard("agent.run")

    @precondition(lambda self: any(t.held_by(self.model.now) for t in self.model.tasks))
    @rule()
    def expire(self) -> None:
        """Move the test clock past the earliest live lease: it reads ``QUEUED`` again."""
        now = self.model.now
        soonest = min(t.expires for t in self.model.tasks if t.held_by(now) and t.expires)
        self.clock.advance(soonest - now)

    @rule(ms=st.sampled_from([1, 1000, LEASE_DEFAULT_MS // 2]))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def one_holder_per_task(self) -> None:
        now = self.model.now
        seen: dict[str, str] = {}
        for who in self.workers:
            answer, code = self.call(who, "agenttask.leases", {})
            assert code is None
            held = [lease["task"]["taskId"] for lease in answer["leases"]]
            for task_id in held:
                assert task_id not in seen, f"{task_id} held by {seen[task_id]} and {who}"
                seen[task_id] = who.token_id
            mine = {t.task_id for t in self.model.tasks if t.held_by(now) == who.token_id}
            assert set(held) == mine

    @invariant()
    def paused_verbs_read_as_the_model(self) -> None:
        answer, code = self.call(self.admin, "agenttask.paused", {})
        assert code is None
        assert {v["verb"] for v in answer["verbs"]} == self.model.paused

    @invariant()
    def final_states_stay_final(self) -> None:
        for task_id, status in self.model.finished.items():
            assert self.model.find(task_id).status == status

    @invariant()
    def reads_agree_with_the_model(self) -> None:
        now = self.model.now
        for task in self.model.tasks:
            view, code = self.call(self.admin, "agenttask.get", {"taskId": task.task_id})
            assert code is None
            assert view["status"] == task.effective(now)
            assert view["fence"] == task.fence
            holder = task.held_by(now)
            assert (view["lease"] or {}).get("owner") == holder
            if view["status"] in TERMINAL:
                assert view["finishedAtMs"] is not None
        for status, members in itertools.groupby(
            sorted(self.model.tasks, key=lambda t: t.effective(now)),
            key=lambda t: t.effective(now),
        ):
            listed, code = self.call(self.admin, "agenttask.list", {"status": status})
            assert code is None
            assert {t["taskId"] for t in listed["tasks"]} == {t.task_id for t in members}


_SETTINGS = settings(
    max_examples=25,  # each example is ~40 audited calls on a real journal, reads per step
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.fixture
def machine(tmp_path) -> type[QueueMachine]:
    clock = FakeClock(START_MS)
    service = Service.open(tmp_path / "data", clock=clock)

    class Machine(QueueMachine):
        pass

    Machine.service, Machine.clock = service, clock
    yield Machine
    service.close()


# A plain test function, not hypothesis' unittest TestCase: the directory's autouse backend
# fixture cannot reach a TestCase.
def test_queue_machine(machine: type[QueueMachine]) -> None:
    run_state_machine_as_test(machine, settings=_SETTINGS)
