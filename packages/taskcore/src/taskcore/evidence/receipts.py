"""Collector completion and v2 receipts: what keeps a collected task counting, and finalize.

* :func:`collector_completion_problem` rechecks a retained transfer whenever anything relies
  on it (registration epoch current, unrevoked, not re-enrolled; the collector profile still
  the current one of its scope; the originating grant live); it is registered as the
  ``collector`` entry of :data:`~taskcore.workflow.lookups.COMPLETION_CHECKS`;
* :func:`collector_finalize` creates the v2 receipt of a current subject whose required
  tasks are all collector-complete, re-verifying every retained transfer (at most 32, each
  length checked against 16 MiB before it is read);
* :func:`admitted_receipt` is admission's evidence check, run again by the landing recheck.

The other server-side collector operations are :mod:`taskcore.evidence.claim` (claim,
descriptor), :mod:`taskcore.evidence.imports` (upload) and
:mod:`taskcore.evidence.qualification`; all run through the journal's
:class:`~taskcore.workflow.lookups.Caller` and its lookups (:mod:`taskcore.workflow.lookups`)
in the journal's lock order: the actor/workspace guard, then one transaction in which the
route, the guard, the subject, the enrollment, the collector profile and the originating
grant are all rechecked before anything is written. Revoked or re-enrolled keys, superseded
subjects, changed profiles, revoked origin tokens and failed runs never produce (or keep) a
receipt.
"""

from __future__ import annotations

import json
from typing import Final

from taskcore.authority.enrollment import current_registration
from taskcore.authority.subjects import check_current
from taskcore.canonical import canonical_json
from taskcore.clock import Clock
from taskcore.contract import (
    CAPABILITY,
    AgentIdentity,
    ExecutorBinding,
    GraphStatus,
    WorkflowTask,
    WorkflowTaskAttempt,
)
from taskcore.contract.collector_records import SandboxMode
from taskcore.contract.collector_transfer import OriginGrant, decode_transfer
from taskcore.contract.collector_wire import (
    FinalizeOutcome,
    FinalizeRequest,
    ReceiptTask,
    ReceiptTransfer,
    ReceiptV2,
)
from taskcore.digest import RECEIPT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence import forge
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES, FINALIZE_TRANSFERS_MAX
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.collector_api import ReceiptRecord, TransferRecord
from taskcore.store.journal_api import AttemptRecord, TaskRecord
from taskcore.store.storage import Storage, Transaction
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.lookups import COMPLETION_CHECKS, Caller, decode_body, route_view

__all__ = [
    "COLLECTOR_COMPLETION",
    "admitted_receipt",
    "attempt_of",
    "collector_completion_problem",
    "collector_finalize",
    "grant_generation",
    "origin_problem",
    "receipt_digest",
    "receipt_for",
    "registration_problem",
]


COLLECTOR_COMPLETION: Final = "collector"
"""``TaskRecord.completion`` of a task completed by a validated passing collector record."""


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


def registration_problem(
    tx: Transaction, task: TaskRecord, binding: ExecutorBinding
) -> tuple[str, TaskError] | None:
    """Why ``binding``'s registration no longer counts for ``task`` (code and error), or ``None``."""
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


def attempt_of(tx: Transaction, attempt_id: str) -> tuple[AttemptRecord, WorkflowTaskAttempt]:
    """A retained transfer's attempt row and decoded attempt (``INTEGRITY_FAILURE`` if missing)."""
    stored = tx.journal.get_attempt(attempt_id)
    if stored is None:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a retained transfer's attempt is missing")
    return stored, decode_body(WorkflowTaskAttempt, stored.body)


def collector_completion_problem(
    tx: Transaction, task: TaskRecord, transfer: TransferRecord
) -> str | None:
    """Why a retained transfer no longer counts, as a stable code, or ``None`` if it does.

    Rechecks the registration epoch (current, unrevoked, not re-enrolled), the collector
    profile (still the current one of its scope, same bytes) and the originating grant.
    """
    if not transfer.passing:
        return "collector_not_passed"
    _, attempt = attempt_of(tx, transfer.attempt_id)
    if attempt.executor is None:
        return "executor_not_current"
    problem = registration_problem(tx, task, attempt.executor)
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


def _transfer_sandbox(transfer: TransferRecord) -> SandboxMode | None:
    """The sandbox an imported transfer's view recorded (``None`` for older views)."""
    try:
        value = json.loads(transfer.view).get("sandbox")
        return None if value is None else SandboxMode(value)
    except (ValueError, AttributeError):
        return None


def receipt_for(
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
        wtask: WorkflowTask = decode_body(WorkflowTask, task.body)
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
                _, attempt = attempt_of(tx, transfer.attempt_id)
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
    expected, problems = receipt_for(tx, subject)
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
        route_view(tx, caller)
        caller.guard.check(tx, caller.guard_request(GuardAction.RESULT))
        subject = tx.authority.latest_subject(
            caller.repository_id, caller.profile_id, request.change_id
        )
        if subject is None:
            raise TaskError(ErrorCode.NOT_FOUND, "the Change has no subject; checkpoint first")
        check_current(tx, subject)
        receipt, problems = receipt_for(tx, subject)
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
