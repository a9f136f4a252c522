"""The journal's claims: a fenced attempt for one task, after its dependencies and authority."""

from __future__ import annotations

from taskcore.authority.enrollment import current_registration
from taskcore.authority.subjects import check_current
from taskcore.canonical import canonical_json
from taskcore.contract import (
    TaskClaimRequest,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
    request_digest,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence import forge
from taskcore.store.journal_api import AttemptRecord
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal_base import JournalBase
from taskcore.workflow.lookups import (
    Caller,
    check_dependencies,
    decode_body,
    new_attempt_id,
    policy_of,
    prefetch,
    require_task,
    route_view,
    subject_of,
    task_in_route,
    unresolved_prior_task,
)
from taskcore.workflow.states import AttemptState, Event
from taskcore.workflow.transition import check, transition
from taskcore.workflow.types import ClaimOutcome

__all__ = [
    "ClaimsMixin",
]


class ClaimsMixin(JournalBase):
    """Claiming a task: one new attempt with a fresh fence and an issued lease."""

    # -- claim --------------------------------------------------------------------------
    def claim(
        self,
        caller: Caller,
        request: TaskClaimRequest,
        *,
        kind: str = "claim",
        progression: WorkflowProgression = WorkflowProgression.AGENT_RESULT,
    ) -> bytes:
        """Claim one task; return the exact outcome bytes (a :class:`ClaimOutcome`).

        ``kind``/``progression`` let a collector claim reuse this path for collector steps.
        """
        digest = request_digest(kind, request, caller.agent)
        with self._write(caller, GuardAction.CLAIM) as tx:
            prefetch(tx, caller, request_id=request.request_id, task_id=request.task_id)
            route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.CLAIM, task_id=request.task_id))
            retained = self._retained(tx, caller, request.request_id, kind, digest)
            if retained is not None:
                return retained
            now = self.clock.now_ms()
            task = require_task(task_in_route(tx, caller, request.task_id), request.task_digest)
            subject = subject_of(tx, task)
            check_current(tx, subject)
            wtask = decode_body(WorkflowTask, task.body)
            if wtask.entrypoint.progression is not progression:
                raise TaskError(
                    ErrorCode.ILLEGAL_TRANSITION,
                    f"this step progresses by {wtask.entrypoint.progression.value}; a {kind} "
                    "cannot claim it",
                )
            if request.executor is not None:
                current_registration(
                    tx,
                    repository_id=task.repository_id,
                    step_id=task.step_id,
                    binding=request.executor,
                )
            check(Event.CLAIM, task)
            check_dependencies(tx, task, wtask)
            prior = unresolved_prior_task(tx, task)
            if prior is not None:
                raise TaskError(
                    ErrorCode.PRIOR_SUBJECT_UNRESOLVED,
                    "an older subject's attempt for this Change, profile and step is "
                    "unresolved; reconcile it first",
                    details={"task_id": prior},
                )
            policy = policy_of(tx, subject)
            lease = min(request.requested_lease_ms, self.lease_max_ms, policy.lease_max_ms)
            attempt = WorkflowTaskAttempt(
                version=1,
                task_id=task.task_id,
                task_digest=task.task_digest,
                attempt_id=new_attempt_id(),
                claim_request_id=request.request_id,
                execution_operation_id=request.execution_operation_id,
                agent=caller.agent,
                executor=request.executor,
                fence=task.next_fence,
                lease_ms=lease,
                issued_at_ms=now,
            )
            attempt.validate_for_claim(request, caller.agent)
            attempt_digest = attempt.digest
            transition(
                Event.CLAIM,
                task,
                attempt=AttemptRecord(
                    attempt_id=attempt.attempt_id,
                    task_id=task.task_id,
                    fence=attempt.fence,
                    attempt_digest=attempt_digest,
                    body=canonical_json(attempt),
                    owner_id=caller.agent.owner_id,
                    agent_id=caller.agent.agent_id,
                    state=AttemptState.LEASED.value,
                    lease_expires_at_ms=now + lease,
                    superseded_by_fence=None,
                    created_at_ms=now,
                    updated_at_ms=now,
                ),
                agent=(caller.agent.owner_id, caller.agent.agent_id),
                now_ms=now,
                request_id=request.request_id,
                log_event=kind,
            ).write(tx)
            outcome = canonical_json(
                ClaimOutcome(
                    task_id=task.task_id,
                    task_digest=task.task_digest,
                    attempt=attempt,
                    attempt_digest=attempt_digest,
                    lease_expires_at_ms=now + lease,
                )
            )
            self._bind(
                tx,
                caller,
                request_id=request.request_id,
                kind=kind,
                digest=digest,
                task_id=task.task_id,
                attempt_id=attempt.attempt_id,
                outcome=outcome,
                now=now,
            )
            forge.status_for_claim(tx, now, task)
            return outcome
