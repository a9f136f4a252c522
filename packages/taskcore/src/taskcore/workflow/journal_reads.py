"""The journal's reads: status, task, recovery, requirements, next, instructions, reference.

Each is one read transaction with ``guard.check`` and no write at all.
"""

from __future__ import annotations

from taskcore.authority import gitrev
from taskcore.authority.enrollment import registration_is_current
from taskcore.authority.requirement import CompiledPlan
from taskcore.contract import (
    SUPPORTED_SCHEMA_VERSIONS,
    AssertionOutcome,
    FenceSupersession,
    InstructionEntrypointResponse,
    InstructionsRequest,
    ObservedState,
    ReferenceFetchRequest,
    ReferenceFetchResponse,
    ReferenceStatus,
    SchemaMismatch,
    TaskRecoveryEnvelope,
    TaskStatusRequest,
    TrustClass,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
    schema_mismatch,
)
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import REFERENCE_BODY_MAX_BYTES
from taskcore.store.journal_api import AttemptRecord, TaskRecord
from taskcore.store.storage import Transaction
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.journal_base import JournalBase
from taskcore.workflow.lookups import (
    Caller,
    check_dependencies,
    decode_body,
    is_current,
    require_task,
    retained_completes,
    route_view,
    subject_of,
    task_in_route,
    to_subject_view,
    unresolved_prior_task,
)
from taskcore.workflow.recovery import project_recovery
from taskcore.workflow.states import (
    UNRESOLVED_TASK_STATES,
    AttemptState,
    TaskState,
    observe_attempt,
)
from taskcore.workflow.types import (
    AttemptView,
    NextRequest,
    NextResponse,
    RecoveryKind,
    RequirementsRequest,
    RequirementsResponse,
    RetainedResultView,
    StepView,
    SubjectView,
    TaskReadRequest,
    TaskRecoveryRequest,
    TaskSummary,
    TaskView,
)

__all__ = [
    "ReadsMixin",
]


class ReadsMixin(JournalBase):
    """The read-only views (no request ID is consumed)."""

    # -- status -------------------------------------------------------------------------
    def status(self, caller: Caller, request: TaskStatusRequest) -> AttemptView:
        """Read one exact attempt: retained state, observed expiry, current applicability."""
        with self._read() as tx:
            route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = require_task(task_in_route(tx, caller, request.task_id), request.task_digest)
            stored = tx.journal.get_attempt(request.attempt_id)
            if stored is None or stored.task_id != task.task_id:
                raise TaskError(
                    ErrorCode.NOT_FOUND, "no such attempt of this task", path="$.attempt_id"
                )
            return self._attempt_view(tx, task, stored, self.clock.now_ms())

    def task(self, caller: Caller, request: TaskReadRequest) -> TaskView:
        """Read one task of the route by ID, with its newest attempt's status (read-only)."""
        with self._read() as tx:
            route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = task_in_route(tx, caller, request.task_id)
            if task is None:
                raise TaskError(
                    ErrorCode.NOT_FOUND,
                    "no such task under this repository and profile",
                    path="$.task_id",
                )
            subject = subject_of(tx, task)
            stored = (
                tx.journal.get_attempt(task.current_attempt_id)
                if task.current_attempt_id is not None
                else None
            )
            return TaskView(
                task_id=task.task_id,
                task_digest=task.task_digest,
                step_id=task.step_id,
                change_id=subject.change_id,
                change_version=subject.change_version,
                subject_current=is_current(tx, subject),
                state=TaskState(task.state).value,
                current_attempt=None
                if stored is None
                else self._attempt_view(tx, task, stored, self.clock.now_ms()),
            )

    def _attempt_view(
        self, tx: Transaction, task: TaskRecord, stored: AttemptRecord, now: int
    ) -> AttemptView:
        attempt = decode_body(WorkflowTaskAttempt, stored.body)
        observed = observe_attempt(AttemptState(stored.state), stored.lease_expires_at_ms, now)
        subject_current = is_current(tx, subject_of(tx, task))
        enrolled = attempt.executor is None or registration_is_current(
            tx, repository_id=task.repository_id, step_id=task.step_id, binding=attempt.executor
        )
        retained_view = None
        retained = tx.journal.get_assertion(stored.attempt_id)
        if retained is not None:
            retained_view = RetainedResultView(
                request_id=retained.request_id,
                trust_class=TrustClass(retained.trust_class),
                outcome=AssertionOutcome(retained.outcome),
                admission="nonpassing",
                completes_dependency=retained_completes(tx, task, retained),
                observation_digest=retained.observation_digest,
            )
        return AttemptView(
            task_id=task.task_id,
            task_digest=task.task_digest,
            attempt=attempt,
            attempt_digest=stored.attempt_digest,
            state=observed,
            lease_expires_at_ms=stored.lease_expires_at_ms,
            currently_applicable=observed is ObservedState.LEASED and subject_current and enrolled,
            subject_current=subject_current,
            fence_supersession=None
            if stored.superseded_by_fence is None
            else FenceSupersession(old_fence=stored.fence, new_fence=stored.superseded_by_fence),
            retained_result=retained_view,
        )

    # -- recovery -----------------------------------------------------------------------
    def recovery(self, caller: Caller, request: TaskRecoveryRequest) -> TaskRecoveryEnvelope:
        """Project what is known about one mutation request (see :mod:`.recovery`)."""
        kind = request.kind.value
        with self._read() as tx:
            route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            now = self.clock.now_ms()
            task = require_task(task_in_route(tx, caller, request.task_id), request.task_digest)
            row = tx.journal.get_request(
                caller.agent.owner_id, caller.agent.agent_id, request.request_id
            )
            if row is not None and (
                row.kind != kind
                or row.task_id != task.task_id
                or (request.attempt_id is not None and row.attempt_id != request.attempt_id)
            ):
                raise TaskError(
                    ErrorCode.IDEMPOTENCY_CONFLICT,
                    f"request ID {request.request_id!r} is bound to another request",
                    path="$.request_id",
                )
            if request.kind is RecoveryKind.CLAIM:
                attempt_id = row.attempt_id if row is not None else task.current_attempt_id
                if attempt_id is None:
                    raise TaskError(
                        ErrorCode.NOT_FOUND,
                        "no claim with this request ID committed and the task has no attempt: "
                        "the claim had no effect, and an identical retry is safe",
                        details={
                            "disposition": "conclusive_rejection",
                            "observed_state": "pending",
                            "permitted_actions": ["inspect", "stop", "retry_identical"],
                        },
                    )
                stored = tx.journal.get_attempt(attempt_id)
            else:
                if (
                    request.attempt_id is None
                    or request.attempt_digest is None
                    or request.fence is None
                ):
                    raise TaskError(
                        ErrorCode.MISSING_FIELD,
                        f"a {kind} names its attempt_id, attempt_digest and fence",
                        path="$.attempt_id",
                    )
                stored = tx.journal.get_attempt(request.attempt_id)
                if stored is not None and stored.task_id != task.task_id:
                    stored = None
            if stored is not None:
                attempt = decode_body(WorkflowTaskAttempt, stored.body)
                if request.kind is not RecoveryKind.CLAIM and (
                    request.attempt_digest != stored.attempt_digest
                    or request.fence != stored.fence
                    or request.execution_operation_id != attempt.execution_operation_id
                ):
                    raise TaskError(
                        ErrorCode.BINDING_MISMATCH,
                        "attempt_digest, fence and execution_operation_id must be the attempt's",
                        path="$.attempt_digest",
                    )
                if (
                    request.kind is RecoveryKind.CLAIM
                    and row is not None
                    and request.execution_operation_id != attempt.execution_operation_id
                ):
                    raise TaskError(
                        ErrorCode.IDEMPOTENCY_CONFLICT,
                        f"request ID {request.request_id!r} claimed with another execution "
                        "identity",
                        path="$.execution_operation_id",
                    )
                attempt_id, attempt_digest, fence = (
                    stored.attempt_id,
                    stored.attempt_digest,
                    stored.fence,
                )
            else:
                assert request.attempt_id is not None
                assert request.attempt_digest is not None
                assert request.fence is not None
                attempt_id, attempt_digest, fence = (
                    request.attempt_id,
                    request.attempt_digest,
                    request.fence,
                )
            return project_recovery(
                kind=kind,
                request_id=request.request_id,
                execution_operation_id=request.execution_operation_id,
                task_id=task.task_id,
                task_digest=task.task_digest,
                attempt_id=attempt_id,
                attempt_digest=attempt_digest,
                fence=fence,
                retained=row,
                attempt=stored,
                now_ms=now,
            )

    # -- requirements and next ------------------------------------------------------------
    def requirements(self, caller: Caller, request: RequirementsRequest) -> RequirementsResponse:
        """The route's installed plan; with a Change, its newest subject and tasks."""
        with self._read() as tx:
            view = route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ))
            plan = view.plan()
            subject_view = None
            tasks: tuple[TaskSummary, ...] = ()
            if request.change_id is not None:
                subject = tx.authority.latest_subject(
                    caller.repository_id, caller.profile_id, request.change_id
                )
                if subject is not None:
                    subject_view = to_subject_view(subject, is_current(tx, subject))
                    tasks = self._summaries(
                        tx, tx.journal.tasks_of_subject(subject.subject_seq), self.clock.now_ms()
                    )
            return RequirementsResponse(
                requirement_id=plan.requirement_id,
                requirement_digest=plan.requirement_digest,
                plan_digest=plan.digest,
                target=view.profile.target,
                policy_epoch=view.repository.policy_epoch,
                policy_digest=view.repository.policy_digest,
                steps=_steps(plan),
                subject=subject_view,
                tasks=tasks,
            )

    def next(self, caller: Caller, request: NextRequest) -> NextResponse:
        """Select the first claimable task of the Change's current subject, in plan order."""
        with self._read() as tx:
            route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.SELECT))
            subject = tx.authority.latest_subject(
                caller.repository_id, caller.profile_id, request.change_id
            )
            if subject is None:
                return _none(None, "no_subject", None)
            if not is_current(tx, subject):
                return _none(to_subject_view(subject, False), "subject_stale", None)
            view = to_subject_view(subject, True)
            now = self.clock.now_ms()
            reasons: dict[str, str] = {}
            for task in tx.journal.tasks_of_subject(subject.subject_seq):
                state = TaskState(task.state)
                if state in UNRESOLVED_TASK_STATES:
                    stored = (
                        tx.journal.get_attempt(task.current_attempt_id)
                        if task.current_attempt_id
                        else None
                    )
                    live = (
                        stored is not None
                        and stored.state == AttemptState.LEASED.value
                        and now < stored.lease_expires_at_ms
                    )
                    reasons.setdefault(
                        "attempt_in_progress" if live else "reconcile_required", task.task_id
                    )
                    continue
                if state is not TaskState.PENDING:
                    continue
                wtask = decode_body(WorkflowTask, task.body)
                if wtask.entrypoint.progression is not WorkflowProgression.AGENT_RESULT:
                    reasons.setdefault("not_agent_claimable", task.task_id)
                    continue
                try:
                    check_dependencies(tx, task, wtask)
                except TaskError:
                    reasons.setdefault("waiting_on_dependencies", task.task_id)
                    continue
                prior = unresolved_prior_task(tx, task)
                if prior is not None:
                    reasons.setdefault("prior_subject_unresolved", prior)
                    continue
                return NextResponse(
                    status="task",
                    subject=view,
                    task=wtask,
                    task_digest=task.task_digest,
                    reason=None,
                    blocking_task_id=None,
                )
            for reason in (
                "prior_subject_unresolved",
                "reconcile_required",
                "attempt_in_progress",
                "waiting_on_dependencies",
                "not_agent_claimable",
            ):
                if reason in reasons:
                    return _none(view, reason, reasons[reason])
            return _none(view, "all_finished", None)

    # -- instructions and references ----------------------------------------------------------
    def instructions(
        self, caller: Caller, request: InstructionsRequest
    ) -> InstructionEntrypointResponse:
        """The task's instruction entrypoint, or an explicit schema mismatch."""
        with self._read() as tx:
            route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = require_task(task_in_route(tx, caller, request.task_id), request.task_digest)
        if not set(request.supported_schema_versions) & set(SUPPORTED_SCHEMA_VERSIONS):
            return InstructionEntrypointResponse(
                status="schema_mismatch",
                task_id=task.task_id,
                task_digest=task.task_digest,
                entrypoint=None,
                mismatch=schema_mismatch(request.supported_schema_versions),
            )
        return InstructionEntrypointResponse(
            status="entrypoint",
            task_id=task.task_id,
            task_digest=task.task_digest,
            entrypoint=decode_body(WorkflowTask, task.body).entrypoint,
            mismatch=None,
        )

    def reference(
        self, caller: Caller, request: ReferenceFetchRequest
    ) -> ReferenceFetchResponse | SchemaMismatch:
        """Serve one named reference of the stored task, never from a caller's path.

        Repository, commit and path come from the stored task and subject. The body is
        refused above 128 KiB before it is read, and its SHA-256 must equal both the stored
        reference and the request's commitment; there is no partial success.
        """
        if request.expected_schema_version not in SUPPORTED_SCHEMA_VERSIONS:
            return schema_mismatch((request.expected_schema_version,))
        with self._read() as tx:
            view = route_view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = require_task(task_in_route(tx, caller, request.task_id), request.task_digest)
            subject = subject_of(tx, task)
        refs = {r.name: r for r in decode_body(WorkflowTask, task.body).entrypoint.references}
        ref = refs.get(request.name)

        def answer(status: ReferenceStatus, code: str) -> ReferenceFetchResponse:
            return ReferenceFetchResponse(
                status=status,
                name=request.name,
                sha256=request.expected_sha256 if ref is None else ref.sha256,
                content=None,
                byte_length=None,
                code=code,
            )

        if ref is None:
            return answer(ReferenceStatus.MISSING, "unknown_reference")
        if ref.sha256 != request.expected_sha256:
            return answer(ReferenceStatus.DENIED, "commitment_mismatch")
        try:
            read = gitrev.read_blob_at(
                view.repository.work_tree,
                subject.commit,
                ref.path,
                max_bytes=REFERENCE_BODY_MAX_BYTES,
            )
        except TaskError as err:
            if err.code is ErrorCode.STORAGE_UNAVAILABLE:
                return answer(ReferenceStatus.UNCERTAIN, "repository_unavailable")
            raise
        if read.status == gitrev.BlobStatus.MISSING:
            return answer(ReferenceStatus.MISSING, "not_in_revision")
        if read.status == gitrev.BlobStatus.NOT_A_FILE:
            return answer(ReferenceStatus.DENIED, "not_a_file")
        if read.status == gitrev.BlobStatus.TOO_LARGE:
            return answer(ReferenceStatus.LIMIT, "too_large")
        assert read.data is not None
        if sha256_hex(read.data) != ref.sha256:
            return answer(ReferenceStatus.UNCERTAIN, "content_changed")
        try:
            text = read.data.decode("utf-8")
        except UnicodeDecodeError:
            return answer(ReferenceStatus.UNCERTAIN, "not_utf8")
        return ReferenceFetchResponse(
            status=ReferenceStatus.AVAILABLE,
            name=ref.name,
            sha256=ref.sha256,
            content=text,
            byte_length=len(read.data),
            code=None,
        )


def _none(subject: SubjectView | None, reason: str, blocking: str | None) -> NextResponse:
    return NextResponse(
        status="none",
        subject=subject,
        task=None,
        task_digest=None,
        reason=reason,
        blocking_task_id=blocking,
    )


def _steps(plan: CompiledPlan) -> tuple[StepView, ...]:
    return tuple(
        StepView(
            step_id=c.step.step_id,
            summary=c.step.summary,
            action_class=c.step.action_class,
            graph_status=c.step.graph_status,
            progression=c.step.progression,
            depends_on=c.step.depends_on,
            criteria=c.step.criteria,
            skill_digest=c.skill_digest,
        )
        for c in plan.steps
    )
