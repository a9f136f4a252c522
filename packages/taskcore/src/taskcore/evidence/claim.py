"""Claiming a collector step, and the descriptor a local collector runs from.

* :func:`collector_claim` claims a ``collector`` step for the registration the current
  collector profile authorizes (the request cannot name an executor);
* :func:`collector_descriptor` derives everything a local collector needs for a claimed
  attempt, including the pinned request (read-only).
"""

from __future__ import annotations

from taskcore.authority.subjects import check_current
from taskcore.contract import (
    CommandCollectorProfile,
    TaskClaimRequest,
    WorkflowProgression,
    WorkflowTaskAttempt,
)
from taskcore.contract.collector_descriptor import (
    CollectorDescriptor,
    PinnedBinding,
    build_execution_request,
    request_bytes,
)
from taskcore.contract.collector_transfer import OriginGrant
from taskcore.contract.collector_wire import CollectorClaimRequest, DescriptorRequest
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.profiles import binding_of, current_profile
from taskcore.evidence.receipts import grant_generation, registration_problem
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.journal_api import AttemptRecord, TaskRecord
from taskcore.store.storage import Storage
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal import WorkflowJournal
from taskcore.workflow.lookups import (
    Caller,
    decode_body,
    require_task,
    route_view,
    subject_of,
    task_in_route,
)
from taskcore.workflow.states import AttemptState

__all__ = [
    "collector_claim",
    "collector_descriptor",
    "pinned_binding",
]


def collector_claim(
    journal: WorkflowJournal, caller: Caller, request: CollectorClaimRequest
) -> bytes:
    """Claim a collector step for the current collector profile's registration.

    Returns the journal's claim outcome bytes (retained under the request ID).
    """
    with journal.storage.read() as tx:
        route_view(tx, caller)
        task = require_task(task_in_route(tx, caller, request.task_id), request.task_digest)
        _, profile = current_profile(tx, task)
        binding = binding_of(tx, profile)
    claim = TaskClaimRequest(
        version=1,
        request_id=request.request_id,
        task_id=request.task_id,
        task_digest=request.task_digest,
        execution_operation_id=request.execution_operation_id,
        requested_lease_ms=request.requested_lease_ms,
        executor=binding,
    )
    return journal.claim(
        caller, claim, kind="collector_claim", progression=WorkflowProgression.COLLECTOR
    )


def pinned_binding(
    audience: str,
    task: TaskRecord,
    stored: AttemptRecord,
    attempt: WorkflowTaskAttempt,
    subject: SubjectRecord,
) -> PinnedBinding:
    """The binding a descriptor pins for one leased attempt of ``task``."""
    return PinnedBinding(
        audience=audience,
        repository_id=task.repository_id,
        workflow_profile_id=task.profile_id,
        step_id=task.step_id,
        task_id=task.task_id,
        task_digest=task.task_digest,
        attempt_id=stored.attempt_id,
        attempt_digest=stored.attempt_digest,
        execution_operation_id=attempt.execution_operation_id,
        fence=stored.fence,
        revision=subject.revision,
        commit=subject.commit,
    )


def collector_descriptor(
    storage: Storage, caller: Caller, request: DescriptorRequest
) -> CollectorDescriptor:
    """Derive the descriptor of a claimed collector attempt held by the caller (read-only)."""
    with storage.read() as tx:
        route_view(tx, caller)
        caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
        task = require_task(task_in_route(tx, caller, request.task_id), request.task_digest)
        stored = tx.journal.get_attempt(request.attempt_id)
        if stored is None or stored.task_id != task.task_id:
            raise TaskError(
                ErrorCode.NOT_FOUND, "no such attempt of this task", path="$.attempt_id"
            )
        attempt: WorkflowTaskAttempt = decode_body(WorkflowTaskAttempt, stored.body)
        if attempt.agent != caller.agent:
            raise TaskError(ErrorCode.FORBIDDEN, "only the agent holding the attempt may collect")
        if (
            stored.state != AttemptState.LEASED.value
            or task.current_attempt_id != stored.attempt_id
        ):
            raise TaskError(
                ErrorCode.STALE_FENCE
                if stored.state == AttemptState.REPLACED.value
                else ErrorCode.ILLEGAL_TRANSITION,
                f"the attempt is {stored.state}; only a leased attempt can be collected",
                path="$.attempt_id",
            )
        subject = subject_of(tx, task)
        check_current(tx, subject)
        record, profile = current_profile(tx, task)
        if not isinstance(profile, CommandCollectorProfile):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "this step is served by a finite-review profile; its live model transport is "
                "not qualified in this build",
            )
        binding = binding_of(tx, profile)
        if attempt.executor != binding:
            raise TaskError(
                ErrorCode.COLLECTOR_PROFILE_CHANGED,
                "the collector profile changed since the claim; reconcile and claim again",
            )
        problem = registration_problem(tx, task, binding)
        if problem is not None:
            raise problem[1]
        pinned = pinned_binding(tx.collector.audience(), task, stored, attempt, subject)
        exec_request = build_execution_request(pinned, profile)
        return CollectorDescriptor(
            version=1,
            kind="command",
            binding=pinned,
            origin=OriginGrant(
                owner_id=attempt.agent.owner_id,
                agent_id=attempt.agent.agent_id,
                grant_generation=grant_generation(tx, attempt.agent),
            ),
            registration=binding,
            profile=profile,
            profile_digest=record.digest,
            request=exec_request,
            request_sha256=sha256_hex(request_bytes(exec_request)),
        )
