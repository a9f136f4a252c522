"""``workflow.qualification``: the read-only, advisory view the Stop hooks use.

One read snapshot runs the current-subject check and the evidence checks (per task state,
dependency and collector completion, the receipt the evidence supports) and names the next
step as typed data.
"""

from __future__ import annotations

from taskcore.authority.subjects import check_current
from taskcore.clock import Clock
from taskcore.contract import GraphStatus, WorkflowProgression, WorkflowTask
from taskcore.contract.collector_records import ExecutionRecord
from taskcore.contract.collector_transfer import TransferKind, decode_record, decode_transfer
from taskcore.contract.collector_wire import (
    NextStep,
    QualificationFailure,
    QualificationRequest,
    QualificationResponse,
    RunSummary,
    TaskQualification,
    run_summary,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.receipts import (
    COLLECTOR_COMPLETION,
    collector_completion_problem,
    receipt_digest,
    receipt_for,
)
from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    QUALIFICATION_FAILURES_MAX,
    RUN_FAILURES_MAX,
)
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.journal_api import TaskRecord
from taskcore.store.storage import Storage, Transaction
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal import unresolved_prior_task
from taskcore.workflow.lookups import Caller, decode_body, dependency_complete, route_view
from taskcore.workflow.states import AttemptState, TaskState

__all__ = [
    "qualification",
]


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
        route_view(tx, caller)
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
            wtask: WorkflowTask = decode_body(WorkflowTask, task.body)
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
            expected, _ = receipt_for(tx, subject)
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
