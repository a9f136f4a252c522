"""Importing one signed collector transfer (``workflow.collector_upload``).

:func:`collector_upload` checks framing and record digests, then the exact-retry lookup (an
identical retry returns the historical view, changed bytes under the same request or attempt
conflict), then the header against the current task, attempt, fence, origin, profile,
enrollment epoch and key, the signature, the subject, the *regenerated* pinned request (byte
for byte) and the record rules. A validated record finishes the attempt; a passing one
completes the task's dependency (``completion = "collector"``, rechecked live by
:func:`~taskcore.evidence.receipts.collector_completion_problem` whenever anything relies on
it).
"""

from __future__ import annotations

from typing import Final

from taskcore.authority.enrollment import current_registration
from taskcore.authority.subjects import check_current
from taskcore.canonical import canonical_json
from taskcore.clock import Clock
from taskcore.contract import (
    CollectorProfile,
    CommandCollectorProfile,
    GraphStatus,
    WorkflowTask,
    WorkflowTaskAttempt,
)
from taskcore.contract.collector_descriptor import (
    build_execution_request,
    collector_profile_digest,
    request_bytes,
)
from taskcore.contract.collector_records import (
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionRequest,
    check_execution_record,
    isolation_shortfall,
)
from taskcore.contract.collector_transfer import (
    DecodedTransfer,
    TransferKind,
    decode_record,
    decode_transfer,
)
from taskcore.contract.collector_wire import UploadOutcome, run_summary
from taskcore.digest import domain_digest, request_domain
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence import forge
from taskcore.evidence.claim import pinned_binding
from taskcore.evidence.profiles import current_profile
from taskcore.evidence.receipts import COLLECTOR_COMPLETION, grant_generation, origin_problem
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.collector_api import CollectorProfileRecord, TransferRecord
from taskcore.store.journal_api import AttemptRecord, RequestRecord, TaskRecord
from taskcore.store.storage import Storage, Transaction
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.lookups import (
    Caller,
    decode_body,
    require_task,
    route_view,
    subject_of,
    task_in_route,
)
from taskcore.workflow.states import AttemptState, Event
from taskcore.workflow.transition import check, transition

__all__ = [
    "UPLOAD_KIND",
    "collector_upload",
]


UPLOAD_KIND: Final = "collector_upload"
"""The idempotency kind of an upload (its request ID is the header's upload_request_id)."""


def _conflict(message: str) -> TaskError:
    return TaskError(ErrorCode.IDEMPOTENCY_CONFLICT, message, path="$.upload_request_id")


def _retained_upload(
    tx: Transaction, caller: Caller, decoded: DecodedTransfer, digest: str
) -> bytes | None:
    """The historical view of an exact retry, ``None`` for a new upload; conflicts raise."""
    header = decoded.header
    row = tx.journal.get_request(
        caller.agent.owner_id, caller.agent.agent_id, header.upload_request_id
    )
    if row is not None:
        if row.kind != UPLOAD_KIND:
            raise _conflict(
                f"request ID {header.upload_request_id!r} was already used for a {row.kind}"
            )
        if row.request_digest != digest or (row.repository_id, row.profile_id) != (
            caller.repository_id,
            caller.profile_id,
        ):
            raise _conflict(
                "these bytes differ from the transfer first uploaded under this request ID"
            )
        return row.outcome
    existing = tx.collector.transfer_of_attempt(header.attempt_id)
    if existing is not None:
        raise _conflict(
            "another transfer was already imported for this attempt; changed bytes under the "
            "same execution never replace it"
        )
    return None


def _check_header(
    tx: Transaction, caller: Caller, decoded: DecodedTransfer
) -> tuple[
    TaskRecord,
    AttemptRecord,
    WorkflowTaskAttempt,
    SubjectRecord,
    CommandCollectorProfile,
    CollectorProfileRecord,
]:
    header = decoded.header
    if (header.repository_id, header.workflow_profile_id) != (
        caller.repository_id,
        caller.profile_id,
    ):
        raise TaskError(
            ErrorCode.BINDING_MISMATCH, "the transfer is for another repository or profile"
        )
    if header.audience != tx.collector.audience():
        raise TaskError(ErrorCode.BINDING_MISMATCH, "the transfer is for another authority")
    if header.kind is not TransferKind.COMMAND:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "finite-review transfers need a qualified live transport, which this build does "
            "not claim; no review transfer is imported",
        )
    task = require_task(task_in_route(tx, caller, header.task_id), header.task_digest)
    if task.step_id != header.step_id:
        raise TaskError(ErrorCode.BINDING_MISMATCH, "the transfer names another step")
    stored = tx.journal.get_attempt(header.attempt_id)
    if stored is None or stored.task_id != task.task_id:
        raise TaskError(ErrorCode.NOT_FOUND, "no such attempt of this task")
    attempt: WorkflowTaskAttempt = decode_body(WorkflowTaskAttempt, stored.body)
    if header.fence != stored.fence or stored.state == AttemptState.REPLACED.value:
        raise TaskError(
            ErrorCode.STALE_FENCE,
            f"fence {header.fence} is not current for this attempt (it was superseded); an "
            "old fence's transfer finishes nothing",
        )
    if header.attempt_digest != stored.attempt_digest:
        raise TaskError(ErrorCode.BINDING_MISMATCH, "the transfer names another attempt digest")
    if header.execution_operation_id != attempt.execution_operation_id:
        raise TaskError(ErrorCode.BINDING_MISMATCH, "the transfer names another execution")
    if attempt.agent != caller.agent or (header.origin.owner_id, header.origin.agent_id) != (
        attempt.agent.owner_id,
        attempt.agent.agent_id,
    ):
        raise TaskError(
            ErrorCode.FORBIDDEN, "only the agent that claimed the attempt may upload its transfer"
        )
    if header.origin.grant_generation != grant_generation(tx, attempt.agent) or origin_problem(
        tx, header.origin
    ):
        raise TaskError(
            ErrorCode.AUTHORIZATION_CHANGED, "the originating grant is no longer the live one"
        )
    if attempt.executor is None or header.registration != attempt.executor:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            "the transfer names another executor registration than the attempt",
        )
    enrollment = current_registration(
        tx, repository_id=task.repository_id, step_id=task.step_id, binding=header.registration
    )
    if header.public_key != enrollment.public_key:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            "the transfer is signed by a key that is not enrolled for this registration epoch",
        )
    decoded.verify(enrollment.public_key)
    record, profile = current_profile(tx, task)
    if (
        not isinstance(profile, CommandCollectorProfile)
        or header.collector_profile_id != record.profile_id
        or (profile.registration_id, profile.registration_epoch)
        != (header.registration.registration_id, header.registration.registration_epoch)
    ):
        raise TaskError(
            ErrorCode.COLLECTOR_PROFILE_CHANGED,
            "the transfer was collected under a collector profile that is not the current one",
        )
    subject = subject_of(tx, task)
    check_current(tx, subject)
    return task, stored, attempt, subject, profile, record


def collector_upload(storage: Storage, clock: Clock, caller: Caller, envelope: bytes) -> bytes:
    """Import one signed transfer; return the exact view bytes (historical on a retry)."""
    if len(envelope) > COLLECTOR_ENVELOPE_MAX_BYTES:
        raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, "the transfer is larger than 16 MiB")
    decoded = decode_transfer(envelope)
    header = decoded.header
    # The request an upload ID is bound to is the exact envelope: its digest, by kind.
    digest = domain_digest(request_domain(UPLOAD_KIND), decoded.digest.encode("ascii"))
    with caller.guard.hold(GuardAction.RESULT), storage.write() as tx:
        route_view(tx, caller)
        caller.guard.check(tx, caller.guard_request(GuardAction.RESULT, task_id=header.task_id))
        retained = _retained_upload(tx, caller, decoded, digest)
        if retained is not None:
            return retained
        task, stored, attempt, subject, profile, profile_record = _check_header(tx, caller, decoded)
        request: ExecutionRequest = decode_record(ExecutionRequest, decoded.records[0])
        if request.revision != subject.revision or request.commit != subject.commit:
            raise TaskError(
                ErrorCode.REVISION_MISMATCH,
                "the transfer's request is for another revision than the task's subject",
            )
        pinned = pinned_binding(tx.collector.audience(), task, stored, attempt, subject)
        regenerated = request_bytes(build_execution_request(pinned, profile))
        if regenerated != decoded.records[0]:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "the transfer's request is not the pinned request the authority regenerates",
            )
        if collector_profile_digest(profile) != profile_record.digest:
            raise TaskError(ErrorCode.INTEGRITY_FAILURE, "an installed profile's digest is wrong")
        record: ExecutionRecord = decode_record(ExecutionRecord, decoded.records[1])
        check_execution_record(record, request, header.request_sha256)
        if header.collector_identity_sha256 != record.runtime_identity_sha256:
            raise TaskError(
                ErrorCode.RUNTIME_MISMATCH,
                "the header's collector identity is not the record's runtime identity",
            )
        _check_isolation(profile, record)
        passing = record.outcome is ExecutionOutcome.PASSED
        now = clock.now_ms()
        check(Event.RESULT, task, stored)
        view = canonical_json(
            UploadOutcome(
                transfer_digest=decoded.digest,
                upload_request_id=header.upload_request_id,
                task_id=task.task_id,
                attempt_id=stored.attempt_id,
                fence=stored.fence,
                record_outcome=record.outcome.value,
                completes_dependency=passing,
                admission="requires_finalization" if passing else "nonpassing",
                run=run_summary(record, task_id=task.task_id, step_id=task.step_id),
                sandbox=record.runtime.sandbox,
            )
        )
        tx.collector.insert_transfer(
            TransferRecord(
                transfer_digest=decoded.digest,
                upload_request_id=header.upload_request_id,
                owner_id=caller.agent.owner_id,
                agent_id=caller.agent.agent_id,
                grant_generation=header.origin.grant_generation,
                repository_id=task.repository_id,
                workflow_profile_id=task.profile_id,
                subject_seq=task.subject_seq,
                task_id=task.task_id,
                task_digest=task.task_digest,
                attempt_id=stored.attempt_id,
                attempt_digest=stored.attempt_digest,
                execution_operation_id=attempt.execution_operation_id,
                fence=stored.fence,
                registration_id=header.registration.registration_id,
                registration_epoch=header.registration.registration_epoch,
                verification_key_id=header.registration.verification_key_id,
                collector_profile_id=profile_record.profile_id,
                collector_profile_digest=profile_record.digest,
                kind=header.kind.value,
                outcome=record.outcome.value,
                passing=passing,
                length=len(envelope),
                view=view,
                retained_at_ms=now,
            ),
            envelope,
        )
        transition(
            Event.RESULT,
            task,
            attempt=stored,
            agent=(caller.agent.owner_id, caller.agent.agent_id),
            now_ms=now,
            request_id=header.upload_request_id,
            log_event=UPLOAD_KIND,
            completion=COLLECTOR_COMPLETION if passing else None,
        ).write(tx)
        if not passing:
            failed: WorkflowTask = decode_body(WorkflowTask, task.body)
            forge.status_for_failed_record(
                tx,
                now,
                task,
                required=failed.graph_status is GraphStatus.REQUIRED,
                outcome=record.outcome.value,
            )
        tx.journal.insert_request(
            RequestRecord(
                owner_id=caller.agent.owner_id,
                agent_id=caller.agent.agent_id,
                request_id=header.upload_request_id,
                kind=UPLOAD_KIND,
                request_digest=digest,
                repository_id=caller.repository_id,
                profile_id=caller.profile_id,
                task_id=task.task_id,
                attempt_id=stored.attempt_id,
                outcome=view,
                recorded_at_ms=now,
            )
        )
        return view


def _check_isolation(profile: CollectorProfile, record: ExecutionRecord) -> None:
    """The record's sandbox must meet the isolation the command profile requires."""
    if not isinstance(profile, CommandCollectorProfile) or profile.isolation is None:
        return
    shortfall = isolation_shortfall(
        record.runtime.sandbox, record.runtime.isolation, profile.isolation
    )
    if shortfall is not None:
        raise TaskError(
            ErrorCode.RUNTIME_MISMATCH,
            f"the record's isolation falls short of the collector profile: {shortfall}",
            path="$.runtime.isolation",
        )
