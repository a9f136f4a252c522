"""The authority side of collection: claim, descriptor, import, finalization, qualification.

Everything here runs through the journal's :class:`~taskcore.workflow.journal.Caller` (the
authenticated actor, the URL's repository and profile, and the authorization guard) and the
same lock order as the journal: the actor/workspace guard, then one transaction in which the
route, the guard, the subject, the enrollment, the collector profile and the originating
grant are all rechecked before anything is written.

* :func:`collector_claim` claims a ``collector`` step for the registration the current
  collector profile authorizes (the request cannot name an executor);
* :func:`collector_descriptor` derives everything a local collector needs for a claimed
  attempt, including the pinned request (read-only);
* :func:`collector_upload` imports one signed transfer: framing and record digests, the
  exact-retry lookup (an identical retry returns the historical view, changed bytes under
  the same request or attempt conflict), then header vs the current task, attempt, fence,
  origin, profile, enrollment epoch and key, the signature, the subject, the *regenerated*
  pinned request (byte for byte) and the record rules. A validated record finishes the
  attempt; a passing one completes the task's dependency (``completion = "collector"``,
  rechecked live by :func:`collector_completion_problem` whenever anything relies on it);
* :func:`collector_finalize` creates the v2 receipt of a current subject whose required
  tasks are all collector-complete, re-verifying every retained transfer (at most 32, each
  length checked against 16 MiB before it is read);
* :func:`qualification` is the read-only, advisory view the Stop hooks use.

Revoked or re-enrolled keys, superseded subjects, changed profiles, revoked origin tokens and
failed runs never produce (or keep) a receipt.
"""

from __future__ import annotations

import json
from typing import Any, Final

from taskcore.authority.enrollment import current_registration
from taskcore.authority.subjects import check_current, load_route
from taskcore.canonical import canonical_json
from taskcore.clock import Clock
from taskcore.codec import default_codec
from taskcore.collector.descriptor import (
    CollectorDescriptor,
    PinnedBinding,
    build_execution_request,
    collector_profile_digest,
    request_bytes,
)
from taskcore.collector.records import (
    ExecutionOutcome,
    ExecutionRecord,
    ExecutionRequest,
    SandboxMode,
    check_execution_record,
    isolation_shortfall,
)
from taskcore.collector.transfer import (
    DecodedTransfer,
    OriginGrant,
    TransferKind,
    decode_record,
    decode_transfer,
)
from taskcore.collector.wire import (
    CollectorClaimRequest,
    DescriptorRequest,
    FinalizeOutcome,
    FinalizeRequest,
    NextStep,
    QualificationFailure,
    QualificationRequest,
    QualificationResponse,
    ReceiptTask,
    ReceiptTransfer,
    ReceiptV2,
    RunSummary,
    TaskQualification,
    UploadOutcome,
    run_summary,
)
from taskcore.contract import (
    CAPABILITY,
    AgentIdentity,
    CollectorProfile,
    CommandCollectorProfile,
    ExecutorBinding,
    GraphStatus,
    TaskClaimRequest,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
    decode_collector_profile,
)
from taskcore.digest import RECEIPT_DOMAIN, domain_digest, request_domain, sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence import forge
from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    FINALIZE_TRANSFERS_MAX,
    QUALIFICATION_FAILURES_MAX,
    RUN_FAILURES_MAX,
)
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.collector_api import CollectorProfileRecord, ReceiptRecord, TransferRecord
from taskcore.store.journal_api import (
    AttemptRecord,
    RequestRecord,
    TaskRecord,
)
from taskcore.store.storage import Storage, Transaction
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal import (
    COMPLETION_CHECKS,
    Caller,
    WorkflowJournal,
    dependency_complete,
    unresolved_prior_task,
)
from taskcore.workflow.states import (
    AttemptState,
    Event,
    TaskState,
)
from taskcore.workflow.transition import check, transition

__all__ = [
    "COLLECTOR_COMPLETION",
    "UPLOAD_KIND",
    "admitted_receipt",
    "collector_claim",
    "collector_completion_problem",
    "collector_descriptor",
    "collector_finalize",
    "collector_upload",
    "grant_generation",
    "origin_problem",
    "qualification",
    "receipt_digest",
]

COLLECTOR_COMPLETION: Final = "collector"
"""``TaskRecord.completion`` of a task completed by a validated passing collector record."""

UPLOAD_KIND: Final = "collector_upload"
"""The idempotency kind of an upload (its request ID is the header's upload_request_id)."""


# -- small helpers -------------------------------------------------------------------------------


def _decode(cls: type[Any], body: bytes) -> Any:
    return default_codec().decode(cls, body, max_bytes=len(body) + 1)


def _profile_of(record: CollectorProfileRecord) -> CollectorProfile:
    return decode_collector_profile(json.loads(record.body))


def grant_generation(tx: Transaction, agent: AgentIdentity) -> int:
    """The live generation of ``agent``'s grant: its token's creation time (0 in-process).

    A token is immutable until revoked, and a re-issued token is a new token, so the
    creation time names the grant instance an attempt was claimed under.
    """
    record = tx.tokens.get(agent.agent_id)
    return 0 if record is None else record.created_at_ms


def origin_problem(tx: Transaction, origin: OriginGrant) -> str | None:
    """``"authorization_changed"`` unless the originating grant is still live, else ``None``."""
    record = tx.tokens.get(origin.agent_id)
    if record is None:
        return None if origin.grant_generation == 0 else "authorization_changed"
    if (
        record.revoked_at_ms is not None
        or record.workspace != origin.owner_id
        or record.created_at_ms != origin.grant_generation
    ):
        return "authorization_changed"
    return None


def _registration_problem(
    tx: Transaction, task: TaskRecord, binding: ExecutorBinding
) -> tuple[str, TaskError] | None:
    try:
        current_registration(
            tx, repository_id=task.repository_id, step_id=task.step_id, binding=binding
        )
    except TaskError as err:
        if err.code is ErrorCode.EXECUTOR_REVOKED:
            return "executor_revoked", err
        if err.code is ErrorCode.EXECUTOR_NOT_ENROLLED:
            return "executor_not_current", err
        raise
    return None


def _attempt_of(tx: Transaction, attempt_id: str) -> tuple[AttemptRecord, WorkflowTaskAttempt]:
    stored = tx.journal.get_attempt(attempt_id)
    if stored is None:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a retained transfer's attempt is missing")
    return stored, _decode(WorkflowTaskAttempt, stored.body)


def collector_completion_problem(
    tx: Transaction, task: TaskRecord, transfer: TransferRecord
) -> str | None:
    """Why a retained transfer no longer counts, as a stable code, or ``None`` if it does.

    Rechecks the registration epoch (current, unrevoked, not re-enrolled), the collector
    profile (still the current one of its scope, same bytes) and the originating grant.
    """
    if not transfer.passing:
        return "collector_not_passed"
    _, attempt = _attempt_of(tx, transfer.attempt_id)
    if attempt.executor is None:
        return "executor_not_current"
    problem = _registration_problem(tx, task, attempt.executor)
    if problem is not None:
        return problem[0]
    current = tx.collector.current_profile(task.repository_id, task.profile_id, task.step_id)
    if current is None or (current.profile_id, current.digest) != (
        transfer.collector_profile_id,
        transfer.collector_profile_digest,
    ):
        return "collector_profile_changed"
    return origin_problem(
        tx,
        OriginGrant(
            owner_id=transfer.owner_id,
            agent_id=transfer.agent_id,
            grant_generation=transfer.grant_generation,
        ),
    )


def _collector_complete(tx: Transaction, task: TaskRecord) -> bool:
    if task.current_attempt_id is None:
        return False
    transfer = tx.collector.transfer_of_attempt(task.current_attempt_id)
    return transfer is not None and collector_completion_problem(tx, task, transfer) is None


COMPLETION_CHECKS[COLLECTOR_COMPLETION] = _collector_complete


def _task_in_route(tx: Transaction, caller: Caller, task_id: str, digest: str) -> TaskRecord:
    task = tx.journal.get_task(task_id)
    if task is None or (task.repository_id, task.profile_id) != (
        caller.repository_id,
        caller.profile_id,
    ):
        raise TaskError(
            ErrorCode.NOT_FOUND, "no such task under this repository and profile", path="$.task_id"
        )
    if task.task_digest != digest:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH,
            "task_digest is not the stored task's digest; read the task again",
            path="$.task_digest",
        )
    return task


def _subject(tx: Transaction, task: TaskRecord) -> SubjectRecord:
    subject = tx.authority.get_subject(task.subject_seq)
    if subject is None:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a task's subject is missing")
    return subject


def _current_profile(tx: Transaction, task: TaskRecord) -> tuple[CollectorProfileRecord, Any]:
    record = tx.collector.current_profile(task.repository_id, task.profile_id, task.step_id)
    if record is None:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"no collector profile is installed for step {task.step_id!r}; ask the operator "
            "to install one ('agent-task operator install-collector-profile')",
        )
    return record, _profile_of(record)


def _binding_of(tx: Transaction, profile: CollectorProfile) -> ExecutorBinding:
    epochs = [
        e
        for e in tx.authority.enrollments(profile.registration_id)
        if e.registration_epoch == profile.registration_epoch
    ]
    if not epochs:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            "the collector profile names an epoch that is not enrolled",
        )
    return epochs[0].binding


# -- claim -------------------------------------------------------------------------------------


def collector_claim(
    journal: WorkflowJournal, caller: Caller, request: CollectorClaimRequest
) -> bytes:
    """Claim a collector step for the current collector profile's registration.

    Returns the journal's claim outcome bytes (retained under the request ID).
    """
    with journal.storage.read() as tx:
        load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )
        task = _task_in_route(tx, caller, request.task_id, request.task_digest)
        _, profile = _current_profile(tx, task)
        binding = _binding_of(tx, profile)
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


# -- descriptor --------------------------------------------------------------------------------


def _pinned_binding(
    audience: str,
    task: TaskRecord,
    stored: AttemptRecord,
    attempt: WorkflowTaskAttempt,
    subject: SubjectRecord,
) -> PinnedBinding:
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
        load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )
        caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
        task = _task_in_route(tx, caller, request.task_id, request.task_digest)
        stored = tx.journal.get_attempt(request.attempt_id)
        if stored is None or stored.task_id != task.task_id:
            raise TaskError(
                ErrorCode.NOT_FOUND, "no such attempt of this task", path="$.attempt_id"
            )
        attempt: WorkflowTaskAttempt = _decode(WorkflowTaskAttempt, stored.body)
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
        subject = _subject(tx, task)
        check_current(tx, subject)
        record, profile = _current_profile(tx, task)
        if not isinstance(profile, CommandCollectorProfile):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "this step is served by a finite-review profile; its live model transport is "
                "not qualified in this build",
            )
        binding = _binding_of(tx, profile)
        if attempt.executor != binding:
            raise TaskError(
                ErrorCode.COLLECTOR_PROFILE_CHANGED,
                "the collector profile changed since the claim; reconcile and claim again",
            )
        problem = _registration_problem(tx, task, binding)
        if problem is not None:
            raise problem[1]
        pinned = _pinned_binding(tx.collector.audience(), task, stored, attempt, subject)
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


# -- upload ------------------------------------------------------------------------------------


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
    task = _task_in_route(tx, caller, header.task_id, header.task_digest)
    if task.step_id != header.step_id:
        raise TaskError(ErrorCode.BINDING_MISMATCH, "the transfer names another step")
    stored = tx.journal.get_attempt(header.attempt_id)
    if stored is None or stored.task_id != task.task_id:
        raise TaskError(ErrorCode.NOT_FOUND, "no such attempt of this task")
    attempt: WorkflowTaskAttempt = _decode(WorkflowTaskAttempt, stored.body)
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
    record, profile = _current_profile(tx, task)
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
    subject = _subject(tx, task)
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
        load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )
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
        pinned = _pinned_binding(tx.collector.audience(), task, stored, attempt, subject)
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
            failed: WorkflowTask = _decode(WorkflowTask, task.body)
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


def _transfer_sandbox(transfer: TransferRecord) -> SandboxMode | None:
    """The sandbox an imported transfer's view recorded (``None`` for older views)."""
    try:
        value = json.loads(transfer.view).get("sandbox")
        return None if value is None else SandboxMode(value)
    except (ValueError, AttributeError):
        return None


# -- receipts ----------------------------------------------------------------------------------


def _receipt_for(
    tx: Transaction, subject: SubjectRecord
) -> tuple[ReceiptV2 | None, list[tuple[str, str]]]:
    """The receipt the subject's current evidence supports, or why there is none.

    Returns ``(receipt, problems)``; ``problems`` lists ``(task_id, code)`` and the receipt
    is ``None`` whenever a required task is not collector-complete.
    """
    tasks: list[ReceiptTask] = []
    transfers: list[ReceiptTransfer] = []
    problems: list[tuple[str, str]] = []
    for task in tx.journal.tasks_of_subject(subject.subject_seq):
        wtask: WorkflowTask = _decode(WorkflowTask, task.body)
        required = wtask.graph_status is GraphStatus.REQUIRED
        transfer = (
            tx.collector.transfer_of_attempt(task.current_attempt_id)
            if task.current_attempt_id is not None
            else None
        )
        if task.completion == COLLECTOR_COMPLETION and transfer is not None:
            code = collector_completion_problem(tx, task, transfer)
            if code is None:
                if len(transfers) >= FINALIZE_TRANSFERS_MAX:
                    problems.append((task.task_id, "too_many_transfers"))
                    continue
                _, attempt = _attempt_of(tx, transfer.attempt_id)
                assert attempt.executor is not None
                enrollment = current_registration(
                    tx,
                    repository_id=task.repository_id,
                    step_id=task.step_id,
                    binding=attempt.executor,
                )
                tasks.append(
                    ReceiptTask(
                        task_id=task.task_id,
                        task_digest=task.task_digest,
                        step_id=task.step_id,
                        required=required,
                        completion=COLLECTOR_COMPLETION,
                    )
                )
                transfers.append(
                    ReceiptTransfer(
                        transfer_digest=transfer.transfer_digest,
                        task_id=task.task_id,
                        task_digest=task.task_digest,
                        attempt_id=transfer.attempt_id,
                        attempt_digest=transfer.attempt_digest,
                        fence=transfer.fence,
                        registration=attempt.executor,
                        public_key=enrollment.public_key,
                        collector_profile_id=transfer.collector_profile_id,
                        collector_profile_digest=transfer.collector_profile_digest,
                        origin=OriginGrant(
                            owner_id=transfer.owner_id,
                            agent_id=transfer.agent_id,
                            grant_generation=transfer.grant_generation,
                        ),
                        outcome=transfer.outcome,
                        sandbox=_transfer_sandbox(transfer),
                    )
                )
                continue
            if required:
                problems.append((task.task_id, code))
            continue
        if required:
            problems.append((task.task_id, "not_collected"))
    if problems or not tasks:
        return None, problems
    receipt = ReceiptV2(
        receipt_version=2,
        capability=CAPABILITY,
        audience=tx.collector.audience(),
        repository_id=subject.repository_id,
        workflow_profile_id=subject.profile_id,
        change_id=subject.change_id,
        change_version=subject.change_version,
        revision=subject.revision,
        commit=subject.commit,
        subject_binding_digest=subject.binding_digest,
        policy_epoch=subject.policy_epoch,
        requirement_digest=subject.requirement_digest,
        plan_digest=subject.plan_digest,
        tasks=tuple(tasks),
        transfers=tuple(transfers),
    )
    return receipt, problems


def receipt_digest(receipt: ReceiptV2) -> str:
    """``agentscm.agent-workflow-receipt.v2`` over the receipt's canonical bytes."""
    return domain_digest(RECEIPT_DOMAIN, canonical_json(receipt))


def _reverify(tx: Transaction, transfer: TransferRecord, public_key: str) -> None:
    # Streamed one at a time; the stored length is checked before any byte is read.
    envelope = tx.collector.envelope(
        transfer.transfer_digest, max_bytes=COLLECTOR_ENVELOPE_MAX_BYTES
    )
    decoded = decode_transfer(envelope)
    if decoded.digest != transfer.transfer_digest:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a retained transfer changed on disk")
    decoded.verify(public_key)


def admitted_receipt(
    tx: Transaction, subject: SubjectRecord, *, verify_signatures: bool = True
) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """Admission's evidence checks for ``subject``, now: ``(receipt_digest, ())`` or why not.

    The receipt the subject's current evidence supports (live registration and revocation,
    current collector profile, live origin grants: :func:`_receipt_for`) must be the stored
    one, and every retained signed transfer it names must still verify against its enrolled
    key. Problems are ``(task_id, code)`` pairs with the qualification codes, plus
    ``receipt_missing`` and ``transfer_unverified``. Subject currency is the caller's check
    (:func:`~taskcore.authority.subjects.check_current`); the landing recheck runs both.
    """
    expected, problems = _receipt_for(tx, subject)
    if expected is None:
        return None, tuple(problems) or ((subject.change_id, "not_collected"),)
    stored = tx.collector.receipt_of_subject(subject.subject_seq)
    if stored is None or stored.receipt_digest != receipt_digest(expected):
        return None, ((expected.tasks[0].task_id, "receipt_missing"),)
    if verify_signatures:
        for entry in expected.transfers:
            transfer = tx.collector.transfer_of_attempt(entry.attempt_id)
            try:
                if transfer is None:
                    raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a retained transfer is missing")
                _reverify(tx, transfer, entry.public_key)
            except TaskError:
                return None, ((entry.task_id, "transfer_unverified"),)
    return stored.receipt_digest, ()


_PROBLEM_ERRORS: Final = {
    "executor_revoked": ErrorCode.EXECUTOR_REVOKED,
    "executor_not_current": ErrorCode.EXECUTOR_NOT_ENROLLED,
    "collector_profile_changed": ErrorCode.COLLECTOR_PROFILE_CHANGED,
    "authorization_changed": ErrorCode.AUTHORIZATION_CHANGED,
}


def collector_finalize(
    storage: Storage, clock: Clock, caller: Caller, request: FinalizeRequest
) -> FinalizeOutcome:
    """Create (or return the existing) v2 receipt of the Change's current subject."""
    with caller.guard.hold(GuardAction.RESULT), storage.write() as tx:
        load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )
        caller.guard.check(tx, caller.guard_request(GuardAction.RESULT))
        subject = tx.authority.latest_subject(
            caller.repository_id, caller.profile_id, request.change_id
        )
        if subject is None:
            raise TaskError(ErrorCode.NOT_FOUND, "the Change has no subject; checkpoint first")
        check_current(tx, subject)
        receipt, problems = _receipt_for(tx, subject)
        if receipt is None:
            task_id, code = problems[0] if problems else ("", "not_collected")
            raise TaskError(
                _PROBLEM_ERRORS.get(code, ErrorCode.DEPENDENCY_INCOMPLETE),
                f"no receipt: required task {task_id or '(none)'} is not complete ({code})",
                details={"task_id": task_id, "code": code},
            )
        for entry in receipt.transfers:
            transfer = tx.collector.transfer_of_attempt(entry.attempt_id)
            assert transfer is not None
            _reverify(tx, transfer, entry.public_key)
        digest = receipt_digest(receipt)
        body = canonical_json(receipt)
        created = tx.collector.insert_receipt(
            ReceiptRecord(
                receipt_digest=digest,
                subject_seq=subject.subject_seq,
                repository_id=subject.repository_id,
                workflow_profile_id=subject.profile_id,
                change_id=subject.change_id,
                revision=subject.revision,
                body=body,
                created_at_ms=clock.now_ms(),
            )
        )
        if created:
            forge.status_for_receipt(tx, clock.now_ms(), subject, digest)
        return FinalizeOutcome(receipt_digest=digest, created=created, receipt=receipt)


# -- qualification -----------------------------------------------------------------------------


def _not_current(subject: SubjectRecord | None) -> QualificationResponse:
    return QualificationResponse(
        qualified=False,
        subject_current=False,
        receipt_digest=None,
        revision=None if subject is None else subject.revision,
        tasks=(),
        failures=(),
        next=NextStep(operation="checkpoint"),
    )


def qualification(
    storage: Storage, clock: Clock, caller: Caller, request: QualificationRequest
) -> QualificationResponse:
    """Answer whether the Change's current subject is qualified (read-only, advisory).

    One read snapshot runs the current-subject check and the evidence checks: per task the
    journal state, the live lease, the retained transfer and its live registration, profile
    and origin checks, the prior-subject scan, and the receipt against the one the current
    evidence supports.
    """
    with storage.read() as tx:
        load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )
        caller.guard.check(tx, caller.guard_request(GuardAction.READ))
        subject = tx.authority.latest_subject(
            caller.repository_id, caller.profile_id, request.change_id
        )
        if subject is None:
            return _not_current(None)
        try:
            check_current(tx, subject)
        except TaskError as err:
            if err.code is ErrorCode.SUBJECT_STALE:
                return _not_current(subject)
            raise
        now = clock.now_ms()
        rows: list[TaskQualification] = []
        failures: list[QualificationFailure] = []
        reconcile: str | None = None
        claimable: str | None = None
        in_progress = failed_required = False
        all_required_collected = True
        runs: list[RunSummary] = []
        for task in tx.journal.tasks_of_subject(subject.subject_seq):
            wtask: WorkflowTask = _decode(WorkflowTask, task.body)
            required = wtask.graph_status is GraphStatus.REQUIRED
            state, code = _task_state(tx, task, wtask, now)
            rows.append(
                TaskQualification(
                    task_id=task.task_id,
                    task_digest=task.task_digest,
                    step_id=task.step_id,
                    required=required,
                    state=state,  # type: ignore[arg-type]
                )
            )
            if code is not None:
                failures.append(QualificationFailure(task_id=task.task_id, code=code))
            if state in ("pending", "blocked"):
                prior = unresolved_prior_task(tx, task)
                if prior is not None:
                    failures.append(
                        QualificationFailure(task_id=task.task_id, code="prior_subject_unresolved")
                    )
                    reconcile = reconcile or prior
                elif (
                    state == "pending"
                    and wtask.entrypoint.progression is WorkflowProgression.COLLECTOR
                ):
                    if (
                        tx.collector.current_profile(
                            task.repository_id, task.profile_id, task.step_id
                        )
                        is None
                    ):
                        failures.append(
                            QualificationFailure(
                                task_id=task.task_id, code="collector_profile_missing"
                            )
                        )
                    else:
                        claimable = claimable or task.task_id
            if state == "uncertain":
                reconcile = reconcile or task.task_id
            if state == "claimed":
                in_progress = True
            if required and state == "failed":
                failed_required = True
            if state == "failed" and _run_under_superseded_profile(tx, task):
                failures.append(
                    QualificationFailure(task_id=task.task_id, code="collector_profile_changed")
                )
            if state == "failed" and len(runs) < RUN_FAILURES_MAX:
                summary = _failed_run(tx, task)
                if summary is not None:
                    runs.append(summary)
            if required and not (state == "succeeded" and task.completion == COLLECTOR_COMPLETION):
                all_required_collected = False
                if state == "succeeded":
                    failures.append(
                        QualificationFailure(task_id=task.task_id, code="not_collected")
                    )
        receipt_ok: str | None = None
        if all_required_collected and rows:
            expected, _ = _receipt_for(tx, subject)
            stored = tx.collector.receipt_of_subject(subject.subject_seq)
            if (
                expected is not None
                and stored is not None
                and stored.receipt_digest == receipt_digest(expected)
            ):
                receipt_ok = stored.receipt_digest
            else:
                failures.append(
                    QualificationFailure(task_id=rows[0].task_id, code="receipt_missing")
                )
        if receipt_ok is not None:
            next_step = NextStep(operation="none")
        elif reconcile is not None:
            next_step = NextStep(operation="reconcile", task_id=reconcile)
        elif in_progress or failed_required:
            next_step = NextStep(operation="none")
        elif claimable is not None:
            next_step = NextStep(operation="collector_claim", task_id=claimable)
        elif all_required_collected and rows:
            next_step = NextStep(operation="collector_finalize")
        else:
            next_step = NextStep(operation="none")
        return QualificationResponse(
            qualified=receipt_ok is not None,
            subject_current=True,
            receipt_digest=receipt_ok,
            revision=subject.revision,
            tasks=tuple(rows),
            failures=tuple(failures[:QUALIFICATION_FAILURES_MAX]),
            next=next_step,
            run_failures=tuple(runs),
        )


def _run_under_superseded_profile(tx: Transaction, task: TaskRecord) -> bool:
    """Whether the task's retained non-passing run was made under a profile since superseded.

    Then its failure says nothing about the code: the same revision can be collected again
    under the current profile (``checkpoint --retry``).
    """
    if task.current_attempt_id is None:
        return False
    transfer = tx.collector.transfer_of_attempt(task.current_attempt_id)
    if transfer is None or transfer.passing:
        return False
    current = tx.collector.current_profile(task.repository_id, task.profile_id, task.step_id)
    return current is not None and (current.profile_id, current.digest) != (
        transfer.collector_profile_id,
        transfer.collector_profile_digest,
    )


def _failed_run(tx: Transaction, task: TaskRecord) -> RunSummary | None:
    """Why the task's retained run did not pass (its outcome and output tails), if it has one."""
    if task.current_attempt_id is None:
        return None
    transfer = tx.collector.transfer_of_attempt(task.current_attempt_id)
    if transfer is None or transfer.passing or transfer.kind != TransferKind.COMMAND.value:
        return None
    envelope = tx.collector.envelope(
        transfer.transfer_digest, max_bytes=COLLECTOR_ENVELOPE_MAX_BYTES
    )
    decoded = decode_transfer(envelope)
    record: ExecutionRecord = decode_record(ExecutionRecord, decoded.records[1])
    return run_summary(record, task_id=task.task_id, step_id=task.step_id)


def _task_state(
    tx: Transaction, task: TaskRecord, wtask: WorkflowTask, now: int
) -> tuple[str, str | None]:
    state = TaskState(task.state)
    stored = tx.journal.get_attempt(task.current_attempt_id) if task.current_attempt_id else None
    if state is TaskState.PENDING:
        siblings = {t.step_id: t for t in tx.journal.tasks_of_subject(task.subject_seq)}
        for step_id in wtask.depends_on:
            dep = siblings.get(step_id)
            if dep is None or not dependency_complete(tx, dep):
                return "blocked", "dependency_incomplete"
        return "pending", None
    if state is TaskState.CLAIMED:
        live = (
            stored is not None
            and stored.state == AttemptState.LEASED.value
            and now < stored.lease_expires_at_ms
        )
        return ("claimed", "attempt_in_progress") if live else ("uncertain", "lease_expired")
    if state is TaskState.CANCELLED:
        return "uncertain", "attempt_cancelled"
    if dependency_complete(tx, task):
        return "succeeded", None
    transfer = (
        tx.collector.transfer_of_attempt(task.current_attempt_id)
        if task.current_attempt_id
        else None
    )
    if transfer is not None:
        return "failed", collector_completion_problem(tx, task, transfer) or "collector_not_passed"
    return "failed", "result_nonpassing"
