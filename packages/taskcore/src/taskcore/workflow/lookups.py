"""What every journal operation looks up: the caller, the route, tasks, subjects, completion.

:class:`Caller` is who calls and where. The lookups (:func:`route_view`, :func:`task_in_route`,
:func:`require_task`, :func:`subject_of`, :func:`policy_of`) are the one place a task or a
subject is resolved for a route, used by the journal's mixins and by the collector's server
side (:mod:`taskcore.evidence`). :data:`COMPLETION_CHECKS` is how a completed dependency is
rechecked whenever something relies on it (the collector registers its own source).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

import attrs

from taskcore.actors import Actor
from taskcore.authority.enrollment import registration_is_current
from taskcore.authority.requirement import RepositoryPolicy
from taskcore.authority.subjects import AuthorityView, check_current, load_route
from taskcore.codec import default_codec
from taskcore.contract import AgentIdentity, TaskResultAssertion, WorkflowTask
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import RETAINED_SUBJECT_SCAN_MAX
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.callrows import CallKeys
from taskcore.store.journal_api import AssertionRecord, TaskRecord
from taskcore.store.storage import Transaction
from taskcore.workflow.guard import AuthorizationGuard, GuardAction, GuardRequest
from taskcore.workflow.states import UNRESOLVED_TASK_STATES, TaskState
from taskcore.workflow.types import SubjectView

__all__ = [
    "COMPLETION_CHECKS",
    "OBSERVATION_COMPLETION",
    "Caller",
    "check_dependencies",
    "decode_body",
    "dependency_complete",
    "is_current",
    "new_attempt_id",
    "policy_of",
    "prefetch",
    "require_task",
    "retained_completes",
    "retry_refusal",
    "route_view",
    "subject_of",
    "task_in_route",
    "to_subject_view",
    "unresolved_prior_task",
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


def retained_completes(tx: Transaction, task: TaskRecord, retained: AssertionRecord) -> bool:
    """A retained observation completes its task only while its registration is current."""
    if not retained.completes or retained.registration_id is None:
        return False
    assertion = decode_body(TaskResultAssertion, retained.body)
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
    return retained is not None and retained_completes(tx, task, retained)


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


def decode_body(cls: type[T], body: bytes) -> T:
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


def new_attempt_id() -> str:
    """A fresh attempt ID."""
    return "a-" + secrets.token_hex(16)


def to_subject_view(subject: SubjectRecord, current: bool) -> SubjectView:
    """The read view of a stored subject."""
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


def is_current(tx: Transaction, subject: SubjectRecord) -> bool:
    """Whether ``subject`` is still current (only ``SUBJECT_STALE`` means no)."""
    try:
        check_current(tx, subject)
    except TaskError as err:
        if err.code is ErrorCode.SUBJECT_STALE:
            return False
        raise
    return True


def prefetch(
    tx: Transaction,
    caller: Caller,
    *,
    request_id: str,
    task_id: str,
    attempt_id: str | None = None,
) -> None:
    """Read the rows a mutation of ``task_id`` looks up in one statement (``tx.prefetch``).

    The route, the caller's token, the idempotency row, the task, the attempt and the task's
    subject; the lookups below then answer from the stores' memos. It decides nothing: every
    check still runs, in its order, on the same records.
    """
    tx.prefetch(
        CallKeys(
            repository_id=caller.repository_id,
            profile_id=caller.profile_id,
            token_id=caller.actor.token_id,
            owner_id=caller.actor.owner_id,
            agent_id=caller.actor.agent_id,
            request_id=request_id,
            task_id=task_id,
            attempt_id=attempt_id,
        )
    )


def route_view(tx: Transaction, caller: Caller) -> AuthorityView:
    """The authority's view of the caller's route (raises when it is unknown)."""
    return load_route(
        tx,
        workspace=caller.actor.workspace,
        repository_id=caller.repository_id,
        profile_id=caller.profile_id,
    )


def task_in_route(tx: Transaction, caller: Caller, task_id: str) -> TaskRecord | None:
    """The task ``task_id`` if it belongs to the caller's route, else ``None``."""
    task = tx.journal.get_task(task_id)
    if task is None or (task.repository_id, task.profile_id) != (
        caller.repository_id,
        caller.profile_id,
    ):
        return None
    return task


def require_task(task: TaskRecord | None, task_digest: str) -> TaskRecord:
    """``task``, or ``NOT_FOUND`` when missing and ``BINDING_MISMATCH`` on another digest."""
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


def subject_of(tx: Transaction, task: TaskRecord) -> SubjectRecord:
    """The stored subject of ``task`` (``INTEGRITY_FAILURE`` if it is missing)."""
    subject = tx.authority.get_subject(task.subject_seq)
    if subject is None:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a task's subject is missing")
    return subject


def policy_of(tx: Transaction, subject: SubjectRecord) -> RepositoryPolicy:
    """The repository policy epoch ``subject`` was recorded under."""
    record = tx.authority.get_policy(subject.repository_id, subject.policy_epoch)
    if record is None:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a subject's policy epoch is missing")
    return decode_body(RepositoryPolicy, record.body)


def check_dependencies(tx: Transaction, task: TaskRecord, wtask: WorkflowTask) -> None:
    """Raise ``DEPENDENCY_INCOMPLETE`` unless every step ``wtask`` depends on completes."""
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
