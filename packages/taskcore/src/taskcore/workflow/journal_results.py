"""The journal's results: retaining an assertion for one exact attempt at its fence."""

from __future__ import annotations

from taskcore.authority.enrollment import current_registration
from taskcore.authority.subjects import check_current
from taskcore.canonical import canonical_json
from taskcore.contract import (
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    TaskResultAssertion,
    TrustClass,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
    observation_digest,
    request_digest,
    validate_against_attempt,
    validate_against_task,
    verify_observation,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.journal_api import AssertionRecord
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal_base import JournalBase
from taskcore.workflow.lookups import (
    OBSERVATION_COMPLETION,
    Caller,
    decode_body,
    policy_of,
    prefetch,
    require_task,
    route_view,
    subject_of,
    task_in_route,
)
from taskcore.workflow.states import AttemptState, Event
from taskcore.workflow.transition import check, transition
from taskcore.workflow.types import ResultOutcome

__all__ = [
    "ResultsMixin",
]


class ResultsMixin(JournalBase):
    """Retaining a result, and whether a verified observation completes its task."""

    # -- result -------------------------------------------------------------------------
    def result(self, caller: Caller, assertion: TaskResultAssertion) -> bytes:
        """Retain a result for one exact attempt at its fence; return outcome bytes.

        Agent assertions and registered observations are retained as nonpassing material.
        A registered observation is accepted only after exact task/attempt/fence binding,
        the current-registration lookup and strict Ed25519 verification of the observation
        digest; it completes the task as a dependency only if it passed every required
        criterion and none of them is controller-only.
        """
        kind = "result"
        digest = request_digest(kind, assertion, caller.agent)
        with self._write(caller, GuardAction.RESULT) as tx:
            prefetch(
                tx,
                caller,
                request_id=assertion.request_id,
                task_id=assertion.task_id,
                attempt_id=assertion.attempt_id,
            )
            route_view(tx, caller)
            caller.guard.check(
                tx, caller.guard_request(GuardAction.RESULT, task_id=assertion.task_id)
            )
            retained = self._retained(tx, caller, assertion.request_id, kind, digest)
            if retained is not None:
                return retained
            now = self.clock.now_ms()
            task = require_task(task_in_route(tx, caller, assertion.task_id), assertion.task_digest)
            if assertion.agent != caller.agent:
                raise TaskError(
                    ErrorCode.BINDING_MISMATCH,
                    "agent must be the authenticated owner and agent; the server supplies it",
                    path="$.agent",
                )
            wtask = decode_body(WorkflowTask, task.body)
            if wtask.entrypoint.progression is not WorkflowProgression.AGENT_RESULT:
                raise TaskError(
                    ErrorCode.ILLEGAL_TRANSITION,
                    f"this step progresses by {wtask.entrypoint.progression.value}; an "
                    "ordinary result cannot speak for it",
                )
            validate_against_task(assertion, wtask)
            stored = tx.journal.get_attempt(assertion.attempt_id)
            if stored is None or stored.task_id != task.task_id:
                raise TaskError(
                    ErrorCode.NOT_FOUND, "no such attempt of this task", path="$.attempt_id"
                )
            if stored.state == AttemptState.REPLACED.value:
                raise TaskError(
                    ErrorCode.STALE_FENCE,
                    f"fence {stored.fence} was superseded by fence {stored.superseded_by_fence}; "
                    "a late result stays with the old attempt and finishes nothing",
                    path="$.fence",
                )
            attempt = decode_body(WorkflowTaskAttempt, stored.body)
            validate_against_attempt(assertion, attempt)
            check(Event.RESULT, task, stored)
            subject = subject_of(tx, task)
            check_current(tx, subject)
            policy = policy_of(tx, subject)
            observed = assertion.trust_class is TrustClass.REGISTERED_EXECUTOR_OBSERVATION
            obs_digest: str | None = None
            if not observed and not policy.agent_assertions:
                raise TaskError(
                    ErrorCode.FORBIDDEN,
                    "the repository policy does not accept agent assertions",
                    path="$.trust_class",
                )
            if observed:
                assert assertion.executor is not None
                enrollment = current_registration(
                    tx,
                    repository_id=task.repository_id,
                    step_id=task.step_id,
                    binding=assertion.executor,
                )
                verify_observation(assertion, enrollment.public_key)
                obs_digest = observation_digest(assertion)
            completes = observed and self._satisfies(assertion, wtask)
            tx.journal.insert_assertion(
                AssertionRecord(
                    attempt_id=stored.attempt_id,
                    task_id=task.task_id,
                    request_id=assertion.request_id,
                    trust_class=assertion.trust_class.value,
                    outcome=assertion.outcome.value,
                    body=canonical_json(assertion),
                    observation_digest=obs_digest,
                    registration_id=None
                    if assertion.executor is None
                    else assertion.executor.registration_id,
                    registration_epoch=None
                    if assertion.executor is None
                    else assertion.executor.registration_epoch,
                    completes=completes,
                    retained_at_ms=now,
                )
            )
            transition(
                Event.RESULT,
                task,
                attempt=stored,
                agent=(caller.agent.owner_id, caller.agent.agent_id),
                now_ms=now,
                request_id=assertion.request_id,
                completion=OBSERVATION_COMPLETION if completes else None,
            ).write(tx)
            outcome = canonical_json(
                ResultOutcome(
                    task_id=task.task_id,
                    attempt_id=stored.attempt_id,
                    attempt_digest=stored.attempt_digest,
                    fence=stored.fence,
                    trust_class=assertion.trust_class,
                    outcome=assertion.outcome,
                    admission="nonpassing",
                    completes_dependency=completes,
                    observation_digest=obs_digest,
                )
            )
            self._bind(
                tx,
                caller,
                request_id=assertion.request_id,
                kind=kind,
                digest=digest,
                task_id=task.task_id,
                attempt_id=stored.attempt_id,
                outcome=outcome,
                now=now,
            )
            return outcome

    @staticmethod
    def _satisfies(assertion: TaskResultAssertion, task: WorkflowTask) -> bool:
        """A passed observation satisfies the task if every required criterion passed."""
        if assertion.outcome is not AssertionOutcome.PASSED:
            return False
        rows = {r.criterion: r for r in assertion.criteria}
        required = [c for c in task.criteria if c.required]
        if not required:
            return False
        return all(
            c.mode is CriterionMode.OBSERVATION_ELIGIBLE
            and rows[c.criterion].outcome is CriterionOutcome.PASSED
            for c in required
        )
