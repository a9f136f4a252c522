"""The workflow journal: checkpoints, selection, claims, fences, results, reads, recovery.

One :class:`WorkflowJournal` works over one :class:`~taskcore.store.storage.Storage`. Every
public method takes a :class:`Caller` (the authenticated actor, the route's repository and
profile, and the authorization guard) and follows the same shape:

* mutations: ``guard.hold`` (actor/workspace guard), then one ``BEGIN IMMEDIATE``
  transaction in which the route is resolved, ``guard.check`` rechecks authorization, the
  request ID is looked up, the authority is rechecked through the same transaction, the
  transition is taken from the tables in :mod:`~taskcore.workflow.states`, and the new rows,
  the idempotency row (exact outcome bytes) and a transition-log row are written together;
  any refusal raises before anything is written, so nothing is half-applied;
* reads (status, recovery, requirements, next, instructions, reference): one read
  transaction, ``guard.check`` and no write at all; on a read-only storage they never
  create a journal file (see :mod:`taskcore.workflow.reads`).

Idempotency: a mutation's request ID is scoped to the authenticated owner and agent and bound
to the domain-separated digest of its exact canonical bytes and kind
(:func:`taskcore.contract.request_digest`). An identical retry returns the retained outcome
byte for byte, after the current authorization check and even if the subject or enrollment
went stale since; the same ID with any changed field, another kind or another route is
``IDEMPOTENCY_CONFLICT``. A refused request binds nothing: its ID stays free, and retrying it
re-evaluates it. Status and the other reads consume no request ID.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeVar, cast

import attrs

from taskcore.actors import Actor
from taskcore.authority import gitrev
from taskcore.authority.enrollment import current_registration, registration_is_current
from taskcore.authority.requirement import CompiledPlan, RepositoryPolicy
from taskcore.authority.subjects import (
    AuthorityView,
    CompiledCheckpoint,
    check_current,
    compile_checkpoint,
    load_route,
    record_subject,
    subject_references,
)
from taskcore.canonical import canonical_json
from taskcore.clock import Clock, SystemClock
from taskcore.codec import Codec, default_codec
from taskcore.contract import (
    CAPABILITY,
    SUPPORTED_SCHEMA_VERSIONS,
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    FenceSupersession,
    InstructionEntrypointResponse,
    InstructionsRequest,
    MutationAction,
    ObservedState,
    ReferenceFetchRequest,
    ReferenceFetchResponse,
    ReferenceStatus,
    SchemaMismatch,
    TaskClaimRequest,
    TaskMutationRequest,
    TaskRecoveryEnvelope,
    TaskResultAssertion,
    TaskStatusRequest,
    TrustClass,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
    observation_digest,
    request_digest,
    schema_mismatch,
    validate_against_attempt,
    validate_against_task,
    verify_observation,
)
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence import forge
from taskcore.limits import LEASE_MAX_MS, REFERENCE_BODY_MAX_BYTES, RETAINED_SUBJECT_SCAN_MAX
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.journal_api import (
    AssertionRecord,
    AttemptRecord,
    RequestRecord,
    TaskRecord,
    TransitionRecord,
)
from taskcore.store.storage import Storage, Transaction
from taskcore.workflow.derive import derive_tasks
from taskcore.workflow.guard import AuthorizationGuard, GuardAction, GuardRequest
from taskcore.workflow.recovery import project_recovery
from taskcore.workflow.states import (
    UNRESOLVED_TASK_STATES,
    AttemptState,
    Event,
    TaskState,
    observe_attempt,
)
from taskcore.workflow.transition import check, transition
from taskcore.workflow.types import (
    AttemptView,
    CapabilitiesResponse,
    CheckpointRequest,
    CheckpointResponse,
    ClaimOutcome,
    MutationOutcome,
    NextRequest,
    NextResponse,
    RecoveryKind,
    RequirementsRequest,
    RequirementsResponse,
    ResultOutcome,
    RetainedResultView,
    StepView,
    SubjectView,
    TaskReadRequest,
    TaskRecoveryRequest,
    TaskSummary,
    TaskView,
)

__all__ = [
    "COMPLETION_CHECKS",
    "OBSERVATION_COMPLETION",
    "Caller",
    "WorkflowJournal",
    "dependency_complete",
    "retry_refusal",
]

OBSERVATION_COMPLETION: Final = "observation"
"""``TaskRecord.completion`` of a task completed by a verified registered observation."""


@attrs.frozen(kw_only=True)
class Caller:
    """Who calls and where: the authenticated actor, the route and the authorization guard.

    ``repository_id`` and ``profile_id`` come from the route (the URL), never the body.
    """

    actor: Actor
    repository_id: str
    profile_id: str
    guard: AuthorizationGuard

    @property
    def agent(self) -> AgentIdentity:
        """The authenticated owner and agent (the idempotency scope)."""
        return AgentIdentity(owner_id=self.actor.owner_id, agent_id=self.actor.agent_id)

    def guard_request(
        self,
        action: GuardAction,
        *,
        task_id: str | None = None,
        attempt_owner: str | None = None,
        attempt_agent: str | None = None,
        attempt_live: bool = False,
    ) -> GuardRequest:
        """A guard request for this route."""
        return GuardRequest(
            action=action,
            repository_id=self.repository_id,
            profile_id=self.profile_id,
            task_id=task_id,
            attempt_owner=attempt_owner,
            attempt_agent=attempt_agent,
            attempt_live=attempt_live,
        )


# -- dependency completion ----------------------------------------------------------------------


def _retained_completes(tx: Transaction, task: TaskRecord, retained: AssertionRecord) -> bool:
    """A retained observation completes its task only while its registration is current."""
    if not retained.completes or retained.registration_id is None:
        return False
    assertion = _decode(TaskResultAssertion, retained.body)
    if assertion.executor is None:
        return False
    return registration_is_current(
        tx, repository_id=task.repository_id, step_id=task.step_id, binding=assertion.executor
    )


def _observation_complete(tx: Transaction, task: TaskRecord) -> bool:
    """A task completed by an observation stays complete only while its registration is."""
    if task.current_attempt_id is None:
        return False
    retained = tx.journal.get_assertion(task.current_attempt_id)
    return retained is not None and _retained_completes(tx, task, retained)


COMPLETION_CHECKS: dict[str, Callable[[Transaction, TaskRecord], bool]] = {
    OBSERVATION_COMPLETION: _observation_complete,
}
"""How each completion source is rechecked whenever a dependency relies on it.

A component that completes tasks another way (the collector's imported records) registers
its own recheck under its ``completion`` name; an unknown name never completes anything.
"""


def dependency_complete(tx: Transaction, task: TaskRecord) -> bool:
    """Whether ``task`` currently completes a dependency (fails closed)."""
    if task.completion is None:
        return False
    check = COMPLETION_CHECKS.get(task.completion)
    return check is not None and check(tx, task)


# -- decoding with an immutable-body cache ----------------------------------------------------

T = TypeVar("T")

_CACHE: dict[tuple[type[Any], bytes], Any] = {}
_CACHE_MAX: Final = 4096


def unresolved_prior_task(tx: Transaction, task: TaskRecord) -> str | None:
    """Return an older subject's unresolved task ID for ``task``'s key, or ``None``.

    The key is repository, Change, profile and step; the bounded scan examines at most 4096
    retained task identities.
    """
    return tx.journal.unresolved_prior_task(
        repository_id=task.repository_id,
        change_id=task.change_id,
        profile_id=task.profile_id,
        step_id=task.step_id,
        before_subject_seq=task.subject_seq,
        scan_limit=RETAINED_SUBJECT_SCAN_MAX,
    )


def retry_refusal(tx: Transaction, subject: SubjectRecord) -> str | None:
    """Why ``subject``'s inputs may not be checkpointed again as a new version, or ``None``.

    A retry is for a subject whose run is over and did not count: none of its tasks is
    unresolved (claimed or cancelled; reconcile those first) and at least one finished
    without completing its dependency (a failed run, or one whose collector profile,
    enrollment or origin grant no longer counts).
    """
    tasks = tx.journal.tasks_of_subject(subject.subject_seq)
    if any(TaskState(t.state) in UNRESOLVED_TASK_STATES for t in tasks):
        return (
            "a task of this subject is still claimed or cancelled; run 'agent-task reconcile "
            f"{subject.change_id}' (or let the collection finish) before a retry"
        )
    if not any(
        TaskState(t.state) is TaskState.FINISHED and not dependency_complete(tx, t) for t in tasks
    ):
        return (
            "nothing to retry: no task of this subject finished without counting; run "
            f"'agent-task collect {subject.change_id}' instead"
        )
    return None


def _decode(cls: type[T], body: bytes) -> T:
    """Decode a stored canonical body (bodies are immutable, so decoded values are cached)."""
    key = (cls, body)
    hit = _CACHE.get(key)
    if hit is not None:
        return cast(T, hit)
    value = default_codec().decode(cls, body, max_bytes=len(body) + 1)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = value
    return value


def _new_attempt_id() -> str:
    return "a-" + secrets.token_hex(16)


def _subject_view(subject: SubjectRecord, current: bool) -> SubjectView:
    return SubjectView(
        repository_id=subject.repository_id,
        profile_id=subject.profile_id,
        change_id=subject.change_id,
        change_version=subject.change_version,
        revision=subject.revision,
        commit=subject.commit,
        context_digest=subject.context_digest,
        target=subject.target,
        policy_epoch=subject.policy_epoch,
        policy_digest=subject.policy_digest,
        requirement_digest=subject.requirement_digest,
        plan_digest=subject.plan_digest,
        current=current,
    )


def _is_current(tx: Transaction, subject: SubjectRecord) -> bool:
    try:
        check_current(tx, subject)
    except TaskError as err:
        if err.code is ErrorCode.SUBJECT_STALE:
            return False
        raise
    return True


class WorkflowJournal:
    """The journal over one storage; see the module docstring for the common shape.

    ``lease_max_ms`` is the configured maximum lease; a claim gets
    ``min(requested, lease_max_ms, the repository policy's lease_max_ms)``.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock | None = None,
        lease_max_ms: int = LEASE_MAX_MS,
        codec: Codec | None = None,
    ) -> None:
        self.storage = storage
        self.clock: Clock = clock or SystemClock()
        self.lease_max_ms = lease_max_ms
        self.codec = codec or default_codec()

    # -- plumbing -----------------------------------------------------------------------
    @contextmanager
    def _write(self, caller: Caller, action: GuardAction) -> Iterator[Transaction]:
        with caller.guard.hold(action), self.storage.write() as tx:
            yield tx

    @contextmanager
    def _read(self) -> Iterator[Transaction]:
        with self.storage.read() as tx:
            yield tx

    @staticmethod
    def _view(tx: Transaction, caller: Caller) -> AuthorityView:
        return load_route(
            tx,
            workspace=caller.actor.workspace,
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
        )

    @staticmethod
    def _task_in_route(tx: Transaction, caller: Caller, task_id: str) -> TaskRecord | None:
        task = tx.journal.get_task(task_id)
        if task is None or (task.repository_id, task.profile_id) != (
            caller.repository_id,
            caller.profile_id,
        ):
            return None
        return task

    @staticmethod
    def _require_task(task: TaskRecord | None, task_digest: str) -> TaskRecord:
        if task is None:
            raise TaskError(
                ErrorCode.NOT_FOUND,
                "no such task under this repository and profile",
                path="$.task_id",
            )
        if task.task_digest != task_digest:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "task_digest is not the stored task's digest; read the task again",
                path="$.task_digest",
            )
        return task

    @staticmethod
    def _retained(
        tx: Transaction, caller: Caller, request_id: str, kind: str, digest: str
    ) -> bytes | None:
        row = tx.journal.get_request(caller.agent.owner_id, caller.agent.agent_id, request_id)
        if row is None:
            return None
        if row.kind != kind:
            raise TaskError(
                ErrorCode.IDEMPOTENCY_CONFLICT,
                f"request ID {request_id!r} was already used for a {row.kind}; use a fresh ID",
                path="$.request_id",
            )
        if row.request_digest != digest or (row.repository_id, row.profile_id) != (
            caller.repository_id,
            caller.profile_id,
        ):
            raise TaskError(
                ErrorCode.IDEMPOTENCY_CONFLICT,
                f"request ID {request_id!r} is bound to a different request; an identical "
                "retry returns the first outcome, a changed request needs a fresh ID",
                path="$.request_id",
            )
        return row.outcome

    def _bind(
        self,
        tx: Transaction,
        caller: Caller,
        *,
        request_id: str,
        kind: str,
        digest: str,
        task_id: str,
        attempt_id: str | None,
        outcome: bytes,
        now: int,
    ) -> None:
        tx.journal.insert_request(
            RequestRecord(
                owner_id=caller.agent.owner_id,
                agent_id=caller.agent.agent_id,
                request_id=request_id,
                kind=kind,
                request_digest=digest,
                repository_id=caller.repository_id,
                profile_id=caller.profile_id,
                task_id=task_id,
                attempt_id=attempt_id,
                outcome=outcome,
                recorded_at_ms=now,
            )
        )

    @staticmethod
    def _log(
        tx: Transaction,
        caller: Caller,
        *,
        now: int,
        task_id: str,
        attempt_id: str | None,
        event: str,
        before: str,
        after: str,
        fence: int | None,
        request_id: str | None,
    ) -> None:
        tx.journal.append_transition(
            TransitionRecord(
                at_ms=now,
                task_id=task_id,
                attempt_id=attempt_id,
                event=event,
                from_state=before,
                to_state=after,
                fence=fence,
                owner_id=caller.agent.owner_id,
                agent_id=caller.agent.agent_id,
                request_id=request_id,
            )
        )

    @staticmethod
    def _subject(tx: Transaction, task: TaskRecord) -> SubjectRecord:
        subject = tx.authority.get_subject(task.subject_seq)
        if subject is None:
            raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a task's subject is missing")
        return subject

    @staticmethod
    def _policy(tx: Transaction, subject: SubjectRecord) -> RepositoryPolicy:
        record = tx.authority.get_policy(subject.repository_id, subject.policy_epoch)
        if record is None:
            raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a subject's policy epoch is missing")
        return _decode(RepositoryPolicy, record.body)

    def _summaries(
        self, tx: Transaction, tasks: tuple[TaskRecord, ...], now: int
    ) -> tuple[TaskSummary, ...]:
        out = []
        for task in tasks:
            wtask = _decode(WorkflowTask, task.body)
            attempt = (
                tx.journal.get_attempt(task.current_attempt_id)
                if task.current_attempt_id is not None
                else None
            )
            out.append(
                TaskSummary(
                    task_id=task.task_id,
                    task_digest=task.task_digest,
                    step_id=task.step_id,
                    graph_status=wtask.graph_status,
                    progression=wtask.entrypoint.progression,
                    state=TaskState(task.state).value,
                    attempt_state=None
                    if attempt is None
                    else observe_attempt(
                        AttemptState(attempt.state), attempt.lease_expires_at_ms, now
                    ),
                    fence=None if attempt is None else attempt.fence,
                    completion=task.completion if dependency_complete(tx, task) else None,
                )
            )
        return tuple(out)

    # -- schema discovery ---------------------------------------------------------------
    @staticmethod
    def capabilities(operations: tuple[str, ...]) -> CapabilitiesResponse:
        """The capability, schema versions and ``operations`` (sorted): task-independent."""
        return CapabilitiesResponse(
            capability=CAPABILITY,
            supported_schema_versions=SUPPORTED_SCHEMA_VERSIONS,
            operations=tuple(sorted(operations)),
        )

    # -- checkpoint ---------------------------------------------------------------------
    def checkpoint(self, caller: Caller, request: CheckpointRequest) -> CheckpointResponse:
        """Record the subject of ``request.change_id`` at ``request.commit`` and derive tasks.

        The commit is read from the operator-registered repository of the route; compiling
        (revision, reference hashes) happens before the writer transaction, which rechecks
        that the authority did not change meanwhile.
        """
        compiled = self.compile_checkpoint(caller, request)
        return self.record_checkpoint(caller, compiled, retry=request.retry)

    def compile_checkpoint(self, caller: Caller, request: CheckpointRequest) -> CompiledCheckpoint:
        """Compile a checkpoint from git (read transaction for the route, git outside it)."""
        with self._read() as tx:
            view = self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.CHECKPOINT))
        return compile_checkpoint(
            view,
            change_id=request.change_id,
            commit=request.commit,
            context=request.context.encode("utf-8"),
        )

    def record_checkpoint(
        self, caller: Caller, compiled: CompiledCheckpoint, *, retry: bool = False
    ) -> CheckpointResponse:
        """Record a compiled checkpoint and derive its tasks in one writer transaction.

        Refuses (``CONFLICT``) if the authority changed since ``compiled`` was compiled. With
        ``retry``, the same inputs as the newest subject become a new Change version when
        :func:`retry_refusal` allows it (see :attr:`CheckpointRequest.retry`).
        """
        if (compiled.repository_id, compiled.profile_id) != (
            caller.repository_id,
            caller.profile_id,
        ):
            raise TaskError(ErrorCode.BAD_INPUT, "the checkpoint was compiled for another route")
        with self._write(caller, GuardAction.CHECKPOINT) as tx:
            view = self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.CHECKPOINT))
            now = self.clock.now_ms()
            previous = tx.authority.latest_subject(
                caller.repository_id, caller.profile_id, compiled.change_id
            )
            again = (
                retry
                and previous is not None
                and previous.binding_digest == compiled.binding_digest()
            )
            if again:
                assert previous is not None
                refusal = retry_refusal(tx, previous)
                if refusal is not None:
                    raise TaskError(ErrorCode.CONFLICT, refusal)
            subject, created = record_subject(tx, compiled, now_ms=now, new_version=again)
            if created:
                plan = view.plan()
                for index, task in enumerate(
                    derive_tasks(plan, subject, subject_references(subject))
                ):
                    inserted = tx.journal.insert_task(
                        TaskRecord(
                            task_id=task.task_id,
                            task_digest=task.digest,
                            subject_seq=subject.subject_seq,
                            repository_id=subject.repository_id,
                            profile_id=subject.profile_id,
                            change_id=subject.change_id,
                            step_id=task.subject.step_id,
                            plan_index=index,
                            body=canonical_json(task),
                            state=TaskState.PENDING.value,
                            next_fence=1,
                            current_attempt_id=None,
                            completion=None,
                            created_at_ms=now,
                            updated_at_ms=now,
                        )
                    )
                    if not inserted:
                        raise TaskError(ErrorCode.INTERNAL, "a derived task ID already exists")
                    self._log(
                        tx,
                        caller,
                        now=now,
                        task_id=task.task_id,
                        attempt_id=None,
                        event="derive",
                        before="none",
                        after=TaskState.PENDING.value,
                        fence=None,
                        request_id=None,
                    )
            tasks = tx.journal.tasks_of_subject(subject.subject_seq)
            return CheckpointResponse(
                created=created,
                subject=_subject_view(subject, True),
                superseded_change_version=previous.change_version
                if created and previous is not None
                else None,
                tasks=self._summaries(tx, tasks, now),
            )

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
            self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.CLAIM, task_id=request.task_id))
            retained = self._retained(tx, caller, request.request_id, kind, digest)
            if retained is not None:
                return retained
            now = self.clock.now_ms()
            task = self._require_task(
                self._task_in_route(tx, caller, request.task_id), request.task_digest
            )
            subject = self._subject(tx, task)
            check_current(tx, subject)
            wtask = _decode(WorkflowTask, task.body)
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
            self._check_dependencies(tx, task, wtask)
            prior = unresolved_prior_task(tx, task)
            if prior is not None:
                raise TaskError(
                    ErrorCode.PRIOR_SUBJECT_UNRESOLVED,
                    "an older subject's attempt for this Change, profile and step is "
                    "unresolved; reconcile it first",
                    details={"task_id": prior},
                )
            policy = self._policy(tx, subject)
            lease = min(request.requested_lease_ms, self.lease_max_ms, policy.lease_max_ms)
            attempt = WorkflowTaskAttempt(
                version=1,
                task_id=task.task_id,
                task_digest=task.task_digest,
                attempt_id=_new_attempt_id(),
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

    @staticmethod
    def _check_dependencies(tx: Transaction, task: TaskRecord, wtask: WorkflowTask) -> None:
        if not wtask.depends_on:
            return
        siblings = {t.step_id: t for t in tx.journal.tasks_of_subject(task.subject_seq)}
        for step_id in wtask.depends_on:
            dep = siblings.get(step_id)
            if dep is None or not dependency_complete(tx, dep):
                raise TaskError(
                    ErrorCode.DEPENDENCY_INCOMPLETE,
                    f"step {step_id!r} is not complete; only a task-bound registered "
                    "observation that satisfies its criteria completes it",
                    details={"task_id": dep.task_id if dep is not None else step_id},
                )

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
            self._view(tx, caller)
            now = self.clock.now_ms()
            found = self._task_in_route(tx, caller, request.task_id)
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
            task = self._require_task(found, request.task_digest)
            if stored is None:
                raise TaskError(
                    ErrorCode.NOT_FOUND, "no such attempt of this task", path="$.attempt_id"
                )
            attempt = _decode(WorkflowTaskAttempt, stored.body)
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
            subject = self._subject(tx, task)
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
            self._view(tx, caller)
            caller.guard.check(
                tx, caller.guard_request(GuardAction.RESULT, task_id=assertion.task_id)
            )
            retained = self._retained(tx, caller, assertion.request_id, kind, digest)
            if retained is not None:
                return retained
            now = self.clock.now_ms()
            task = self._require_task(
                self._task_in_route(tx, caller, assertion.task_id), assertion.task_digest
            )
            if assertion.agent != caller.agent:
                raise TaskError(
                    ErrorCode.BINDING_MISMATCH,
                    "agent must be the authenticated owner and agent; the server supplies it",
                    path="$.agent",
                )
            wtask = _decode(WorkflowTask, task.body)
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
            attempt = _decode(WorkflowTaskAttempt, stored.body)
            validate_against_attempt(assertion, attempt)
            check(Event.RESULT, task, stored)
            subject = self._subject(tx, task)
            check_current(tx, subject)
            policy = self._policy(tx, subject)
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

    # -- status -------------------------------------------------------------------------
    def status(self, caller: Caller, request: TaskStatusRequest) -> AttemptView:
        """Read one exact attempt: retained state, observed expiry, current applicability."""
        with self._read() as tx:
            self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = self._require_task(
                self._task_in_route(tx, caller, request.task_id), request.task_digest
            )
            stored = tx.journal.get_attempt(request.attempt_id)
            if stored is None or stored.task_id != task.task_id:
                raise TaskError(
                    ErrorCode.NOT_FOUND, "no such attempt of this task", path="$.attempt_id"
                )
            return self._attempt_view(tx, task, stored, self.clock.now_ms())

    def task(self, caller: Caller, request: TaskReadRequest) -> TaskView:
        """Read one task of the route by ID, with its newest attempt's status (read-only)."""
        with self._read() as tx:
            self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = self._task_in_route(tx, caller, request.task_id)
            if task is None:
                raise TaskError(
                    ErrorCode.NOT_FOUND,
                    "no such task under this repository and profile",
                    path="$.task_id",
                )
            subject = self._subject(tx, task)
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
                subject_current=_is_current(tx, subject),
                state=TaskState(task.state).value,
                current_attempt=None
                if stored is None
                else self._attempt_view(tx, task, stored, self.clock.now_ms()),
            )

    def _attempt_view(
        self, tx: Transaction, task: TaskRecord, stored: AttemptRecord, now: int
    ) -> AttemptView:
        attempt = _decode(WorkflowTaskAttempt, stored.body)
        observed = observe_attempt(AttemptState(stored.state), stored.lease_expires_at_ms, now)
        subject_current = _is_current(tx, self._subject(tx, task))
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
                completes_dependency=_retained_completes(tx, task, retained),
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
            self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            now = self.clock.now_ms()
            task = self._require_task(
                self._task_in_route(tx, caller, request.task_id), request.task_digest
            )
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
                attempt = _decode(WorkflowTaskAttempt, stored.body)
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
            view = self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ))
            plan = view.plan()
            subject_view = None
            tasks: tuple[TaskSummary, ...] = ()
            if request.change_id is not None:
                subject = tx.authority.latest_subject(
                    caller.repository_id, caller.profile_id, request.change_id
                )
                if subject is not None:
                    subject_view = _subject_view(subject, _is_current(tx, subject))
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
            self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.SELECT))
            subject = tx.authority.latest_subject(
                caller.repository_id, caller.profile_id, request.change_id
            )
            if subject is None:
                return _none(None, "no_subject", None)
            if not _is_current(tx, subject):
                return _none(_subject_view(subject, False), "subject_stale", None)
            view = _subject_view(subject, True)
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
                wtask = _decode(WorkflowTask, task.body)
                if wtask.entrypoint.progression is not WorkflowProgression.AGENT_RESULT:
                    reasons.setdefault("not_agent_claimable", task.task_id)
                    continue
                try:
                    self._check_dependencies(tx, task, wtask)
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
            self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = self._require_task(
                self._task_in_route(tx, caller, request.task_id), request.task_digest
            )
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
            entrypoint=_decode(WorkflowTask, task.body).entrypoint,
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
            view = self._view(tx, caller)
            caller.guard.check(tx, caller.guard_request(GuardAction.READ, task_id=request.task_id))
            task = self._require_task(
                self._task_in_route(tx, caller, request.task_id), request.task_digest
            )
            subject = self._subject(tx, task)
        refs = {r.name: r for r in _decode(WorkflowTask, task.body).entrypoint.references}
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
