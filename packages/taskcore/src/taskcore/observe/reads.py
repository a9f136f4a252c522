"""The operator reads: audit feed, backlog, one task, approvals, repositories, subjects, counts.

Every read names the caller's workspace in its store predicate; a row of another workspace
is answered exactly like a missing one.

Handlers take a :class:`~taskcore.queue.common.QueueCall` (the open transaction, the actor,
the time) and return the views of :mod:`taskcore.observe.types`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    FAILURE_EXCERPT_MAX_BYTES,
    OBSERVE_ATTEMPTS_MAX,
    OBSERVE_PAGE_DEFAULT,
    OBSERVE_TASK_AUDIT,
    OBSERVE_TASK_PHASES,
)
from taskcore.observe.requests import (
    ApprovalsIn,
    AuditIn,
    BacklogIn,
    ChangesIn,
    RepositoriesIn,
    SubjectIn,
    SubjectsIn,
)
from taskcore.observe.types import (
    ApprovalEntry,
    ApprovalsResult,
    AttemptView,
    AuditEntry,
    AuditResult,
    BacklogResult,
    ChangesResult,
    ChangeView,
    CountView,
    ReceiptView,
    RepositoriesResult,
    RepositoryView,
    RetentionView,
    StatsResult,
    SubjectDetail,
    SubjectsResult,
    SubjectView,
    TaskDetail,
    TransferView,
    WhoAmI,
    WorkflowTaskView,
)
from taskcore.queue import flow
from taskcore.queue.common import QueueCall, load_task
from taskcore.queue.requests import TaskRef
from taskcore.queue.views import gate_view, phase_view, task_view
from taskcore.store.audit_api import AuditEvent, AuditQuery
from taskcore.store.authority_api import RepositoryRecord, SubjectRecord
from taskcore.store.collector_api import TransferRecord
from taskcore.store.queue_api import ApprovalGateRecord, TaskRecord
from taskcore.store.storage import Transaction

__all__ = [
    "RETENTION_SWEEP",
    "approvals",
    "audit_feed",
    "backlog",
    "changes",
    "failure_excerpt",
    "repositories",
    "stats",
    "subject_detail",
    "subjects",
    "task_detail",
    "whoami",
]

RETENTION_SWEEP = "retention"
"""The name of the retention sweep's row in the retention store."""


def _limit(requested: int | None) -> int:
    return requested or OBSERVE_PAGE_DEFAULT


def _bad_cursor() -> TaskError:
    return TaskError(
        ErrorCode.INVALID_VALUE,
        "cursor is not a nextCursor of this listing; start again without it",
        path="$.cursor",
    )


def whoami(call: QueueCall, _: Any) -> WhoAmI:
    """The caller: token id, name, workspace, tier and autonomy."""
    actor = call.actor
    return WhoAmI(
        token_id=actor.token_id,
        name=actor.name,
        workspace=actor.workspace,
        tier=actor.tier.wire,
        autonomy=actor.autonomy,
    )


# -- audit ---------------------------------------------------------------------------------------


def _entry(event: AuditEvent) -> AuditEntry:
    return AuditEntry(
        seq=event.seq,
        at_ms=event.at_ms,
        actor=event.actor,
        operation=event.operation,
        code=event.outcome,
        task_id=event.subject,
        input_digest=event.input_digest,
    )


def audit_feed(call: QueueCall, request: AuditIn) -> AuditResult:
    """A page of the workspace's audit events, newest first (cursor: the last ``seq``)."""
    limit = _limit(request.limit)
    query = AuditQuery(
        workspace=call.workspace,
        actor=request.actor,
        operation=request.operation,
        outcome=request.code,
        subject=request.task_id,
        since_ms=request.since_ms,
        until_ms=request.until_ms,
        before_seq=None if request.cursor is None else int(request.cursor),
    )
    rows = call.tx.audit.page(query, limit=limit + 1)
    page = rows[:limit]
    return AuditResult(
        events=tuple(_entry(e) for e in page),
        next_cursor=str(page[-1].seq) if len(rows) > limit else None,
    )


# -- the queue -------------------------------------------------------------------------------


def backlog(call: QueueCall, request: BacklogIn) -> BacklogResult:
    """A page of the workspace's tasks in drain order (what ``claimNext`` takes first)."""
    limit = _limit(request.limit)
    after: TaskRecord | None = None
    if request.cursor is not None:
        after = call.tx.queue.get_task(call.workspace, request.cursor)
        if after is None:
            raise _bad_cursor()
    rows = call.tx.queue.backlog(
        call.workspace,
        status=None if request.status is None else request.status.value,
        verb=request.verb,
        matter_id=request.matter_id,
        after=after,
        limit=limit + 1,
        now_ms=call.now_ms,
    )
    page = rows[:limit]
    return BacklogResult(
        tasks=flow.views(call, page),  # with keys and blockers (issue 28)
        next_cursor=page[-1].task_id if len(rows) > limit else None,
    )


def task_detail(call: QueueCall, request: TaskRef) -> TaskDetail:
    """One task with its newest phases, its approval gate and its audit trail."""
    task = load_task(call, request.task_id)
    gate = None
    if task.escalation_gate_id is not None:
        record = call.tx.queue.get_gate(call.workspace, task.escalation_gate_id)
        gate = None if record is None else gate_view(record)
    events = call.tx.audit.page(
        AuditQuery(workspace=call.workspace, subject=task.task_id), limit=OBSERVE_TASK_AUDIT
    )
    return TaskDetail(
        task=flow.view(call, task),
        phases=tuple(
            phase_view(p)
            for p in call.tx.queue.phases(call.workspace, task.task_id, limit=OBSERVE_TASK_PHASES)
        ),
        gate=gate,
        audit=tuple(_entry(e) for e in events),
    )


def grant_text(
    gate: ApprovalGateRecord,
    task: TaskRecord,
    known: Callable[[str], bool] = lambda verb: True,
) -> str:
    """Say in words what approving ``gate`` does, and what its grant admits.

    Approving requeues the task; only ``agenttask.gate.apply`` uses (and consumes) a grant,
    never a claim, and it admits exactly one call: ``targetVerb`` with the input whose hash
    the gate bound. A gate without either admits no call, and so does one naming a verb that
    is no operation here (``known`` says which are).

    >>> from taskcore.store.queue_api import ApprovalGateRecord
    >>> g = ApprovalGateRecord(gate_id="ag_1", workspace="w", task_id="at_1",
    ...     target_verb="deploy", input_hash="ab" * 32, reason=None, status="PENDING",
    ...     requested_by="t", requested_at_ms=0)
    >>> grant_text(g, None)  # doctest: +ELLIPSIS
    'Approving requeues task at_1 with a one-shot grant: its lease holder may run deploy once, ...'
    >>> import attrs
    >>> grant_text(attrs.evolve(g, target_verb=None), None)  # doctest: +ELLIPSIS
    'Approving requeues task at_1. The gate names no call, so it admits none...'
    """
    requeue = f"Approving requeues task {gate.task_id}"
    if gate.target_verb is None:
        return (
            f"{requeue}. The gate names no call, so it admits none (agenttask.gate.apply "
            "answers GRANT_VERB_MISMATCH): approve to let the task be claimed and continue."
        )
    if not known(gate.target_verb):
        return (
            f"{requeue}. The gate names {gate.target_verb}, which is no operation of this "
            "service, so it admits no call (agenttask.gate.apply answers UNKNOWN_OPERATION): "
            "approve to let the task be claimed and continue; the action itself happens "
            "outside agent-task."
        )
    if gate.input_hash is None:
        return (
            f"{requeue}. The gate names {gate.target_verb} but binds no input, so it admits "
            "no call (agenttask.gate.apply answers GRANT_INPUT_MISMATCH): approve to let "
            "the task be claimed and continue."
        )
    return (
        f"{requeue} with a one-shot grant: its lease holder may run {gate.target_verb} once, "
        f"with exactly the input whose hash is {gate.input_hash}, through agenttask.gate.apply, "
        "which consumes the grant. Claiming the task consumes nothing."
    )


def approvals(
    call: QueueCall,
    request: ApprovalsIn,
    known: Callable[[str], bool] = lambda verb: True,
) -> ApprovalsResult:
    """A page of the workspace's approval gates (pending by default), oldest request first.

    ``known`` says whether a verb is an operation of the service (what a grant can run).
    """
    limit = _limit(request.limit)
    after: ApprovalGateRecord | None = None
    if request.cursor is not None:
        after = call.tx.queue.get_gate(call.workspace, request.cursor)
        if after is None:
            raise _bad_cursor()
    rows = call.tx.queue.list_gates(
        call.workspace,
        status=None if request.status is None else request.status.value,
        after=after,
        limit=limit + 1,
    )
    page = rows[:limit]
    entries = []
    for gate in page:
        task = call.tx.queue.get_task(call.workspace, gate.task_id)
        if task is None:  # a gate always has its task; a damaged row is not shown
            continue
        entries.append(
            ApprovalEntry(
                gate=gate_view(gate),
                task=task_view(task, call.now_ms),
                grant=grant_text(gate, task, known),
            )
        )
    return ApprovalsResult(
        approvals=tuple(entries),
        next_cursor=page[-1].gate_id if len(rows) > limit else None,
    )


# -- repositories, Changes, subjects -------------------------------------------------------------


def _repository(tx: Transaction, workspace: str, repository_id: str) -> RepositoryRecord:
    record = tx.authority.get_repository(repository_id)
    if record is None or record.workspace != workspace:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"no repository {repository_id} in this workspace",
            path="$.repositoryId",
        )
    return record


def repositories(call: QueueCall, request: RepositoriesIn) -> RepositoriesResult:
    """A page of the workspace's repositories, by ID."""
    limit = _limit(request.limit)
    rows = call.tx.authority.repositories(call.workspace, after_id=request.cursor, limit=limit + 1)
    page = rows[:limit]
    return RepositoriesResult(
        repositories=tuple(
            RepositoryView(
                repository_id=r.repository_id,
                registered_at_ms=r.registered_at_ms,
                policy_epoch=r.policy_epoch,
                policy_digest=r.policy_digest,
            )
            for r in page
        ),
        next_cursor=page[-1].repository_id if len(rows) > limit else None,
    )


def _receipt_digest(tx: Transaction, subject_seq: int) -> str | None:
    receipt = tx.collector.receipt_of_subject(subject_seq)
    return None if receipt is None else receipt.receipt_digest


def _subject_view(tx: Transaction, s: SubjectRecord) -> SubjectView:
    return SubjectView(
        subject_seq=s.subject_seq,
        profile_id=s.profile_id,
        change_id=s.change_id,
        change_version=s.change_version,
        revision=s.revision,
        commit=s.commit,
        target=s.target,
        binding_digest=s.binding_digest,
        recorded_at_ms=s.recorded_at_ms,
        superseded_at_ms=s.superseded_at_ms,
        receipt_digest=_receipt_digest(tx, s.subject_seq),
    )


def changes(call: QueueCall, request: ChangesIn) -> ChangesResult:
    """A page of a repository's Changes at their current subject, newest first."""
    repo = _repository(call.tx, call.workspace, request.repository_id)
    limit = _limit(request.limit)
    rows = call.tx.authority.current_subjects(
        repo.repository_id,
        before_seq=None if request.cursor is None else int(request.cursor),
        limit=limit + 1,
    )
    page = rows[:limit]
    out = []
    for s in page:
        states: dict[str, int] = {}
        for task in call.tx.journal.tasks_of_subject(s.subject_seq):
            states[task.state] = states.get(task.state, 0) + 1
        digest = _receipt_digest(call.tx, s.subject_seq)
        out.append(
            ChangeView(
                profile_id=s.profile_id,
                change_id=s.change_id,
                subject_seq=s.subject_seq,
                change_version=s.change_version,
                revision=s.revision,
                commit=s.commit,
                recorded_at_ms=s.recorded_at_ms,
                tasks=tuple(CountView(key=k, count=n) for k, n in sorted(states.items())),
                receipt_digest=digest,
                qualified=digest is not None,
            )
        )
    return ChangesResult(
        repository_id=repo.repository_id,
        changes=tuple(out),
        next_cursor=str(page[-1].subject_seq) if len(rows) > limit else None,
    )


def subjects(call: QueueCall, request: SubjectsIn) -> SubjectsResult:
    """A page of one Change's subjects (every version), newest first."""
    repo = _repository(call.tx, call.workspace, request.repository_id)
    limit = _limit(request.limit)
    rows = call.tx.authority.subjects_of_change(
        repo.repository_id,
        request.profile_id,
        request.change_id,
        before_seq=None if request.cursor is None else int(request.cursor),
        limit=limit + 1,
    )
    page = rows[:limit]
    return SubjectsResult(
        subjects=tuple(_subject_view(call.tx, s) for s in page),
        next_cursor=str(page[-1].subject_seq) if len(rows) > limit else None,
    )


def failure_excerpt(envelope: bytes) -> str | None:
    """The end of a failed command's retained output: stderr's tail, then stdout's.

    At most :data:`~taskcore.limits.FAILURE_EXCERPT_MAX_BYTES` bytes, decoded as UTF-8 with
    replacement (the board escapes it like any agent-supplied string). ``None`` when the
    transfer holds no command record (a review) or cannot be parsed.
    """
    from taskcore.contract.collector_records import ExecutionRecord
    from taskcore.contract.collector_transfer import decode_record, decode_transfer

    try:
        decoded = decode_transfer(envelope)
        if len(decoded.records) < 2:
            return None
        record = decode_record(ExecutionRecord, decoded.records[1])
        err, out = record.stderr.retained(), record.stdout.retained()
    except TaskError:
        return None
    joined = err + (b"\n" if err and out else b"") + out
    tail = joined[-FAILURE_EXCERPT_MAX_BYTES:]
    return tail.decode("utf-8", "replace")


def _transfer_view(tx: Transaction, t: TransferRecord) -> TransferView:
    excerpt = None
    if not t.passing and t.pruned_at_ms is None and t.kind == "command":
        try:
            excerpt = failure_excerpt(
                tx.collector.envelope(t.transfer_digest, max_bytes=COLLECTOR_ENVELOPE_MAX_BYTES)
            )
        except TaskError:
            excerpt = None
    return TransferView(
        transfer_digest=t.transfer_digest,
        task_id=t.task_id,
        attempt_id=t.attempt_id,
        kind=t.kind,
        outcome=t.outcome,
        passing=t.passing,
        length=t.length,
        retained_at_ms=t.retained_at_ms,
        bytes_pruned=t.pruned_at_ms is not None,
        failure_excerpt=excerpt,
    )


def subject_detail(tx: Transaction, workspace: str, request: SubjectIn) -> SubjectDetail:
    """One subject: its tasks with attempts and transfers, and its receipt."""
    repo = _repository(tx, workspace, request.repository_id)
    subject = tx.authority.get_subject(request.subject_seq)
    if subject is None or subject.repository_id != repo.repository_id:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"no subject {request.subject_seq} in repository {repo.repository_id}",
            path="$.subjectSeq",
        )
    tasks = []
    for task in tx.journal.tasks_of_subject(subject.subject_seq):
        attempts = tx.journal.attempts_of_task(task.task_id)
        shown = []
        for a in sorted(attempts, key=lambda a: a.fence, reverse=True)[:OBSERVE_ATTEMPTS_MAX]:
            assertion = tx.journal.get_assertion(a.attempt_id)
            shown.append(
                AttemptView(
                    attempt_id=a.attempt_id,
                    fence=a.fence,
                    state=a.state,
                    owner_id=a.owner_id,
                    agent_id=a.agent_id,
                    lease_expires_at_ms=a.lease_expires_at_ms,
                    superseded_by_fence=a.superseded_by_fence,
                    created_at_ms=a.created_at_ms,
                    result_outcome=None if assertion is None else assertion.outcome,
                )
            )
        transfer = (
            tx.collector.transfer_of_attempt(task.current_attempt_id)
            if task.current_attempt_id
            else None
        )
        tasks.append(
            WorkflowTaskView(
                task_id=task.task_id,
                step_id=task.step_id,
                plan_index=task.plan_index,
                state=task.state,
                completion=task.completion,
                next_fence=task.next_fence,
                attempts=tuple(shown),
                attempts_total=len(attempts),
                transfer=None if transfer is None else _transfer_view(tx, transfer),
            )
        )
    receipt = tx.collector.receipt_of_subject(subject.subject_seq)
    return SubjectDetail(
        repository_id=repo.repository_id,
        subject=_subject_view(tx, subject),
        tasks=tuple(tasks),
        receipt=None
        if receipt is None
        else ReceiptView(
            receipt_digest=receipt.receipt_digest,
            created_at_ms=receipt.created_at_ms,
            body=json.loads(receipt.body),
        ),
    )


# -- counts --------------------------------------------------------------------------------------


def retention_view(tx: Transaction) -> RetentionView:
    """The last finished retention sweep (any workspace: it is platform-wide)."""
    run = tx.retention.get(RETENTION_SWEEP)
    deleted: tuple[CountView, ...] = ()
    if run is not None and run.last_report_json:
        report = json.loads(run.last_report_json)
        deleted = tuple(
            CountView(key=str(k), count=int(v))
            for k, v in sorted(report.get("deleted", {}).items())
        )
    return RetentionView(
        finished_at_ms=None if run is None else run.last_finished_at_ms, deleted=deleted
    )


def stats(call: QueueCall, _: Any) -> StatsResult:
    """Counts of the caller's workspace: queue by status, gates, transfers, receipts."""
    ws = call.workspace
    return StatsResult(
        workspace=ws,
        queue=tuple(
            CountView(key=c.status, count=c.count)
            for c in call.tx.queue.depth(ws, now_ms=call.now_ms)
        ),
        approvals=tuple(
            CountView(key=c.status, count=c.count) for c in call.tx.queue.gate_counts(ws)
        ),
        transfers=tuple(
            CountView(key=outcome, count=n)
            for _, outcome, n in call.tx.collector.transfer_counts(ws)
        ),
        receipts=sum(n for _, n in call.tx.collector.receipt_counts(ws)),
        retention=retention_view(call.tx),
    )
