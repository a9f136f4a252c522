"""The journal's plumbing: storage, clock, transactions and the rows every mutation writes.

The rows are the idempotency row (exact outcome bytes) and the transition-log row.

:class:`JournalBase` is what the concern mixins (:mod:`~taskcore.workflow.journal_checkpoints`,
``journal_claims``, ``journal_attempts``, ``journal_results``, ``journal_reads``) share;
:class:`~taskcore.workflow.journal.WorkflowJournal` combines them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from taskcore.clock import Clock, SystemClock
from taskcore.codec import Codec, default_codec
from taskcore.contract import WorkflowTask
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import LEASE_MAX_MS
from taskcore.store.journal_api import RequestRecord, TaskRecord, TransitionRecord
from taskcore.store.storage import Storage, Transaction
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.lookups import Caller, decode_body, dependency_complete
from taskcore.workflow.states import AttemptState, TaskState, observe_attempt
from taskcore.workflow.types import TaskSummary

__all__ = [
    "JournalBase",
]


class JournalBase:
    """The journal over one storage; see the module docstring for the common shape.

    ``lease_max_ms`` is the configured maximum lease; a claim gets
    ``min(requested, lease_max_ms, the repository policy's lease_max_ms)``.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock | None = None,
        lease_max_ms: int = LEASE_MAX_MS,
        codec: Codec | None = None,
    ) -> None:
        self.storage = storage
        self.clock: Clock = clock or SystemClock()
        self.lease_max_ms = lease_max_ms
        self.codec = codec or default_codec()

    # -- plumbing -------------------------------------------------------------------
    @contextmanager
    def _write(self, caller: Caller, action: GuardAction) -> Iterator[Transaction]:
        with caller.guard.hold(action), self.storage.write() as tx:
            yield tx

    @contextmanager
    def _read(self) -> Iterator[Transaction]:
        with self.storage.read() as tx:
            yield tx

    @staticmethod
    def _retained(
        tx: Transaction, caller: Caller, request_id: str, kind: str, digest: str
    ) -> bytes | None:
        row = tx.journal.get_request(caller.agent.owner_id, caller.agent.agent_id, request_id)
        if row is None:
            return None
        if row.kind != kind:
            raise TaskError(
                ErrorCode.IDEMPOTENCY_CONFLICT,
                f"request ID {request_id!r} was already used for a {row.kind}; use a fresh ID",
                path="$.request_id",
            )
        if row.request_digest != digest or (row.repository_id, row.profile_id) != (
            caller.repository_id,
            caller.profile_id,
        ):
            raise TaskError(
                ErrorCode.IDEMPOTENCY_CONFLICT,
                f"request ID {request_id!r} is bound to a different request; an identical "
                "retry returns the first outcome, a changed request needs a fresh ID",
                path="$.request_id",
            )
        return row.outcome

    def _bind(
        self,
        tx: Transaction,
        caller: Caller,
        *,
        request_id: str,
        kind: str,
        digest: str,
        task_id: str,
        attempt_id: str | None,
        outcome: bytes,
        now: int,
    ) -> None:
        tx.journal.insert_request(
            RequestRecord(
                owner_id=caller.agent.owner_id,
                agent_id=caller.agent.agent_id,
                request_id=request_id,
                kind=kind,
                request_digest=digest,
                repository_id=caller.repository_id,
                profile_id=caller.profile_id,
                task_id=task_id,
                attempt_id=attempt_id,
                outcome=outcome,
                recorded_at_ms=now,
            )
        )

    @staticmethod
    def _log(
        tx: Transaction,
        caller: Caller,
        *,
        now: int,
        task_id: str,
        attempt_id: str | None,
        event: str,
        before: str,
        after: str,
        fence: int | None,
        request_id: str | None,
    ) -> None:
        tx.journal.append_transition(
            TransitionRecord(
                at_ms=now,
                task_id=task_id,
                attempt_id=attempt_id,
                event=event,
                from_state=before,
                to_state=after,
                fence=fence,
                owner_id=caller.agent.owner_id,
                agent_id=caller.agent.agent_id,
                request_id=request_id,
            )
        )

    def _summaries(
        self, tx: Transaction, tasks: tuple[TaskRecord, ...], now: int
    ) -> tuple[TaskSummary, ...]:
        out = []
        for task in tasks:
            wtask = decode_body(WorkflowTask, task.body)
            attempt = (
                tx.journal.get_attempt(task.current_attempt_id)
                if task.current_attempt_id is not None
                else None
            )
            out.append(
                TaskSummary(
                    task_id=task.task_id,
                    task_digest=task.task_digest,
                    step_id=task.step_id,
                    graph_status=wtask.graph_status,
                    progression=wtask.entrypoint.progression,
                    state=TaskState(task.state).value,
                    attempt_state=None
                    if attempt is None
                    else observe_attempt(
                        AttemptState(attempt.state), attempt.lease_expires_at_ms, now
                    ),
                    fence=None if attempt is None else attempt.fence,
                    completion=task.completion if dependency_complete(tx, task) else None,
                )
            )
        return tuple(out)
