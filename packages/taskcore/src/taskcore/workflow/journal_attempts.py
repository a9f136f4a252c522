"""The journal's attempt mutations: heartbeat, cancel and reconcile of a held attempt."""

from __future__ import annotations

from taskcore.authority.enrollment import current_registration
from taskcore.authority.subjects import check_current
from taskcore.canonical import canonical_json
from taskcore.contract import (
    FenceSupersession,
    MutationAction,
    TaskMutationRequest,
    WorkflowTaskAttempt,
    request_digest,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal_base import JournalBase
from taskcore.workflow.lookups import (
    Caller,
    decode_body,
    prefetch,
    require_task,
    route_view,
    subject_of,
    task_in_route,
)
from taskcore.workflow.states import AttemptState, Event
from taskcore.workflow.transition import check, transition
from taskcore.workflow.types import MutationOutcome

__all__ = [
    "AttemptsMixin",
]


class AttemptsMixin(JournalBase):
    """Heartbeat, cancel and reconcile: one transition of one exact attempt at its fence."""

    # -- heartbeat, cancel, reconcile ---------------------------------------------------
    def heartbeat(self, caller: Caller, request: TaskMutationRequest) -> bytes:
        """Renew an attempt's lease (its issued interval from now); return outcome bytes."""
        return self._mutate(caller, request, MutationAction.HEARTBEAT)

    def cancel(self, caller: Caller, request: TaskMutationRequest) -> bytes:
        """Cancel (fence) an unfinished attempt; return outcome bytes.

        A cancelled attempt may still be running: the task stays blocked until reconciled.
        """
        return self._mutate(caller, request, MutationAction.CANCEL)

    def reconcile(self, caller: Caller, request: TaskMutationRequest) -> bytes:
        """Supersede an unfinished attempt with a strictly greater fence; return outcome bytes.

        The task becomes claimable again; the next claim gets the recorded new fence and a
        fresh execution identity. The old execution may still run (recovery says so).
        """
        return self._mutate(caller, request, MutationAction.RECONCILE)

    def _mutate(
        self, caller: Caller, request: TaskMutationRequest, action: MutationAction
    ) -> bytes:
        if request.action is not action:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                f"the {action.value} operation takes action {action.value!r}",
                path="$.action",
            )
        kind = action.value
        event = Event(kind)
        digest = request_digest(kind, request, caller.agent)
        with self._write(caller, GuardAction(kind)) as tx:
            prefetch(
                tx,
                caller,
                request_id=request.request_id,
                task_id=request.task_id,
                attempt_id=request.attempt_id,
            )
            route_view(tx, caller)
            now = self.clock.now_ms()
            found = task_in_route(tx, caller, request.task_id)
            stored = tx.journal.get_attempt(request.attempt_id) if found is not None else None
            if stored is not None and stored.task_id != request.task_id:
                stored = None
            caller.guard.check(
                tx,
                caller.guard_request(
                    GuardAction(kind),
                    task_id=request.task_id,
                    attempt_owner=None if stored is None else stored.owner_id,
                    attempt_agent=None if stored is None else stored.agent_id,
                    attempt_live=stored is not None
                    and stored.state == AttemptState.LEASED.value
                    and now < stored.lease_expires_at_ms,
                ),
            )
            retained = self._retained(tx, caller, request.request_id, kind, digest)
            if retained is not None:
                return retained
            task = require_task(found, request.task_digest)
            if stored is None:
                raise TaskError(
                    ErrorCode.NOT_FOUND, "no such attempt of this task", path="$.attempt_id"
                )
            attempt = decode_body(WorkflowTaskAttempt, stored.body)
            for ok, name in (
                (request.attempt_digest == stored.attempt_digest, "attempt_digest"),
                (
                    request.execution_operation_id == attempt.execution_operation_id,
                    "execution_operation_id",
                ),
                (request.executor == attempt.executor, "executor"),
            ):
                if not ok:
                    raise TaskError(
                        ErrorCode.BINDING_MISMATCH,
                        f"{name} does not match the attempt",
                        path=f"$.{name}",
                    )
            state = AttemptState(stored.state)
            if request.fence != stored.fence:
                raise TaskError(
                    ErrorCode.STALE_FENCE,
                    f"fence {request.fence} is not the attempt's fence {stored.fence}",
                    path="$.fence",
                )
            if action is MutationAction.HEARTBEAT:
                if state is AttemptState.REPLACED:
                    raise TaskError(
                        ErrorCode.STALE_FENCE,
                        f"fence {stored.fence} was superseded by fence "
                        f"{stored.superseded_by_fence}; this attempt cannot continue",
                        path="$.fence",
                    )
                if attempt.agent != caller.agent:
                    raise TaskError(
                        ErrorCode.FORBIDDEN, "only the agent holding the attempt may renew it"
                    )
            check(event, task, stored)
            subject = subject_of(tx, task)
            if action is MutationAction.HEARTBEAT:
                # New heartbeat effects need the current subject and enrollment; cancel and
                # reconcile may fence a stale attempt (the route resolved: the repository and
                # the subject's Change still exist).
                check_current(tx, subject)
                if attempt.executor is not None:
                    current_registration(
                        tx,
                        repository_id=task.repository_id,
                        step_id=task.step_id,
                        binding=attempt.executor,
                    )
            effects = transition(
                event,
                task,
                attempt=stored,
                agent=(caller.agent.owner_id, caller.agent.agent_id),
                now_ms=now,
                request_id=request.request_id,
                lease_expires_at_ms=now + attempt.lease_ms
                if action is MutationAction.HEARTBEAT
                else None,
            )
            effects.write(tx)
            expires = effects.attempt.lease_expires_at_ms
            superseded_by = effects.attempt.superseded_by_fence
            supersession: FenceSupersession | None = None
            if action is MutationAction.RECONCILE:
                assert superseded_by is not None
                supersession = FenceSupersession(old_fence=stored.fence, new_fence=superseded_by)
            outcome = canonical_json(
                MutationOutcome(
                    action=kind,  # type: ignore[arg-type]
                    task_id=task.task_id,
                    attempt_id=stored.attempt_id,
                    attempt_digest=stored.attempt_digest,
                    fence=stored.fence,
                    attempt_state=effects.attempt_state.value,  # type: ignore[arg-type]
                    lease_expires_at_ms=expires if action is MutationAction.HEARTBEAT else None,
                    fence_supersession=supersession,
                )
            )
            self._bind(
                tx,
                caller,
                request_id=request.request_id,
                kind=kind,
                digest=digest,
                task_id=task.task_id,
                attempt_id=stored.attempt_id,
                outcome=outcome,
                now=now,
            )
            return outcome
