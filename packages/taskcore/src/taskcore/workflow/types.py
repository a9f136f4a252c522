"""Wire types of the workflow operations that the v1 contract leaves to the journal.

The contract fixes claims, mutations, results, status, instruction and reference requests
and recovery envelopes. This module adds the requests and answers around them: schema
discovery, requirements, next-task selection, checkpoints, the outcome of each mutation (the
bytes retained under its request ID), the attempt view a status read returns and the
recovery request. Every type decodes strictly like the contract's.
"""

from __future__ import annotations

import enum
from typing import Literal

import attrs

from taskcore.authority.gitrev import OBJECT_NAME_PATTERN
from taskcore.codec import wire_field
from taskcore.contract import (
    ActionClass,
    AssertionOutcome,
    FenceSupersession,
    GraphStatus,
    ObservedState,
    TaskCriterion,
    TrustClass,
    WorkflowProgression,
    WorkflowTask,
    WorkflowTaskAttempt,
)
from taskcore.contract.common import digest_field, id_field, repository_field
from taskcore.contract.task import TARGET_PATTERN
from taskcore.limits import (
    CAPABILITY_MAX_CHARS,
    CONTEXT_MAX_BYTES,
    CRITERIA_MAX,
    DEPENDENCIES_MAX,
    ID_MAX_CHARS,
    SCHEMA_VERSIONS_MAX,
    STEPS_MAX,
    TARGET_MAX_CHARS,
    TEXT_MAX_CHARS,
)

__all__ = [
    "NEXT_REASONS",
    "AttemptView",
    "CapabilitiesRequest",
    "CapabilitiesResponse",
    "CheckpointRequest",
    "CheckpointResponse",
    "ClaimOutcome",
    "MutationOutcome",
    "NextRequest",
    "NextResponse",
    "RecoveryKind",
    "RequirementsRequest",
    "RequirementsResponse",
    "ResultOutcome",
    "RetainedResultView",
    "StepView",
    "SubjectView",
    "TaskReadRequest",
    "TaskRecoveryRequest",
    "TaskSummary",
    "TaskView",
]

_ID = r"[A-Za-z0-9._-]{1,128}"
OPERATIONS_MAX = 64
"""Operation names one capabilities answer may list (ours)."""


@attrs.frozen(kw_only=True)
class CapabilitiesRequest:
    """Schema discovery takes no subject and no field: send ``{}``."""


@attrs.frozen(kw_only=True)
class CapabilitiesResponse:
    """The capability, the schema versions this server speaks and its operations, sorted."""

    capability: str = wire_field(max_len=CAPABILITY_MAX_CHARS)
    supported_schema_versions: tuple[int, ...] = wire_field(max_len=SCHEMA_VERSIONS_MAX)
    operations: tuple[str, ...] = wire_field(max_len=OPERATIONS_MAX, item_max_len=64)


@attrs.frozen(kw_only=True)
class SubjectView:
    """A recorded subject of a Change, and whether it is the current one."""

    repository_id: str = repository_field()
    profile_id: str = id_field()
    change_id: str = id_field()
    change_version: int = wire_field(lo=1)
    revision: str = digest_field()
    commit: str = wire_field(max_len=64, pattern=OBJECT_NAME_PATTERN)
    context_digest: str = digest_field()
    target: str = wire_field(max_len=TARGET_MAX_CHARS, pattern=TARGET_PATTERN)
    policy_epoch: int = wire_field()
    policy_digest: str = digest_field()
    requirement_digest: str = digest_field()
    plan_digest: str = digest_field()
    current: bool = wire_field()


@attrs.frozen(kw_only=True)
class TaskSummary:
    """One task of a subject as listings show it.

    ``state`` is the journal state (pending, claimed, finished, cancelled); ``attempt_state``
    the observed state of its newest attempt (``expired`` is judged at read time);
    ``completion`` what completed it as a dependency, if anything.
    """

    task_id: str = id_field()
    task_digest: str = digest_field()
    step_id: str = id_field()
    graph_status: GraphStatus = wire_field()
    progression: WorkflowProgression = wire_field()
    state: Literal["pending", "claimed", "finished", "cancelled"] = wire_field()
    attempt_state: ObservedState | None = wire_field()
    fence: int | None = wire_field()
    completion: str | None = wire_field(max_len=ID_MAX_CHARS, pattern=_ID)


@attrs.frozen(kw_only=True)
class StepView:
    """One step of the installed plan, in plan order."""

    step_id: str = id_field()
    summary: str = wire_field(max_len=TEXT_MAX_CHARS)
    action_class: ActionClass = wire_field()
    graph_status: GraphStatus = wire_field()
    progression: WorkflowProgression = wire_field()
    depends_on: tuple[str, ...] = wire_field(max_len=DEPENDENCIES_MAX, item_pattern=_ID)
    criteria: tuple[TaskCriterion, ...] = wire_field(max_len=CRITERIA_MAX)
    skill_digest: str = digest_field()


@attrs.frozen(kw_only=True)
class RequirementsRequest:
    """The installed requirement of the route's profile, and optionally a Change's tasks."""

    version: int = wire_field(version=True)
    change_id: str | None = wire_field(max_len=ID_MAX_CHARS, pattern=_ID)


@attrs.frozen(kw_only=True)
class RequirementsResponse:
    """The profile's plan; with a Change, its newest subject and that subject's tasks."""

    requirement_id: str = id_field()
    requirement_digest: str = digest_field()
    plan_digest: str = digest_field()
    target: str = wire_field(max_len=TARGET_MAX_CHARS, pattern=TARGET_PATTERN)
    policy_epoch: int = wire_field()
    policy_digest: str = digest_field()
    steps: tuple[StepView, ...] = wire_field(max_len=STEPS_MAX)
    subject: SubjectView | None = wire_field()
    tasks: tuple[TaskSummary, ...] = wire_field(max_len=STEPS_MAX)


@attrs.frozen(kw_only=True)
class NextRequest:
    """Select the next task of a Change (its current subject) for this agent."""

    version: int = wire_field(version=True)
    change_id: str = id_field()


NEXT_REASONS = (
    "no_subject",
    "subject_stale",
    "all_finished",
    "attempt_in_progress",
    "waiting_on_dependencies",
    "prior_subject_unresolved",
    "reconcile_required",
    "not_agent_claimable",
)
"""Stable codes for why ``next`` offers no task."""


@attrs.frozen(kw_only=True)
class NextResponse:
    """A claimable task, or none with a stable reason and the task it concerns.

    ``task`` is the full task (entrypoint with every criterion inline) when ``status`` is
    ``task``. ``blocking_task_id`` names the task to look at when there is none (for
    ``prior_subject_unresolved`` and ``reconcile_required`` it is the task to reconcile).
    """

    status: Literal["task", "none"] = wire_field()
    subject: SubjectView | None = wire_field()
    task: WorkflowTask | None = wire_field()
    task_digest: str | None = wire_field(max_len=64, pattern=r"[0-9a-f]{64}")
    reason: str | None = wire_field(max_len=ID_MAX_CHARS, pattern=_ID)
    blocking_task_id: str | None = wire_field(max_len=ID_MAX_CHARS, pattern=_ID)


@attrs.frozen(kw_only=True)
class CheckpointRequest:
    """Record the subject of a named Change at one commit of the registered repository.

    ``commit`` is a full git object name; the server reads it from the repository the
    operator registered for the route, never from a path in the request. ``context`` is the
    Change's context text (UTF-8, at most 64 KiB), bound by its SHA-256.
    """

    version: int = wire_field(version=True)
    change_id: str = id_field()
    commit: str = wire_field(max_len=64, pattern=OBJECT_NAME_PATTERN)
    context: str = wire_field(max_len=CONTEXT_MAX_BYTES)
    retry: bool = wire_field(default=False)
    """Record a new version of the same inputs when the newest subject's run failed (optional).

    Only when the newest subject binds exactly these inputs, none of its tasks is unresolved
    and one of them finished without completing (a failed or no longer counting collector
    run); otherwise ``CONFLICT``. It gives fresh task IDs on the same revision, so a fixed
    collector profile can run again without an empty commit.
    """


@attrs.frozen(kw_only=True)
class CheckpointResponse:
    """The recorded subject; ``created`` is false when the newest subject already bound it."""

    created: bool = wire_field()
    subject: SubjectView = wire_field()
    superseded_change_version: int | None = wire_field()
    tasks: tuple[TaskSummary, ...] = wire_field(max_len=STEPS_MAX)


@attrs.frozen(kw_only=True)
class ClaimOutcome:
    """A committed claim: the attempt bound to the exact claim request, and its lease."""

    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt: WorkflowTaskAttempt = wire_field()
    attempt_digest: str = digest_field()
    lease_expires_at_ms: int = wire_field()


@attrs.frozen(kw_only=True)
class MutationOutcome:
    """A committed heartbeat, cancellation or reconciliation.

    ``lease_expires_at_ms`` is the renewed expiry (heartbeat only); ``fence_supersession``
    the old and strictly greater fence (reconcile only).
    """

    action: Literal["heartbeat", "cancel", "reconcile"] = wire_field()
    task_id: str = id_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    fence: int = wire_field(lo=1)
    attempt_state: Literal["leased", "cancelled", "replaced"] = wire_field()
    lease_expires_at_ms: int | None = wire_field()
    fence_supersession: FenceSupersession | None = wire_field()


@attrs.frozen(kw_only=True)
class ResultOutcome:
    """A retained result. ``admission`` is always ``nonpassing``: a result never qualifies.

    ``completes_dependency`` is true only for a task-bound registered observation, verified
    against the current enrollment, that satisfies every required criterion.
    """

    task_id: str = id_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    fence: int = wire_field(lo=1)
    trust_class: TrustClass = wire_field()
    outcome: AssertionOutcome = wire_field()
    admission: Literal["nonpassing"] = wire_field()
    completes_dependency: bool = wire_field()
    observation_digest: str | None = wire_field(max_len=64, pattern=r"[0-9a-f]{64}")


@attrs.frozen(kw_only=True)
class RetainedResultView:
    """The retained result of a finished attempt, as a status read reports it now.

    ``completes_dependency`` is recomputed: a revoked or superseded registration no longer
    completes anything, even for a result retained before.
    """

    request_id: str = id_field()
    trust_class: TrustClass = wire_field()
    outcome: AssertionOutcome = wire_field()
    admission: Literal["nonpassing"] = wire_field()
    completes_dependency: bool = wire_field()
    observation_digest: str | None = wire_field(max_len=64, pattern=r"[0-9a-f]{64}")


@attrs.frozen(kw_only=True)
class AttemptView:
    """What a status read returns: one exact attempt, retained, with current applicability.

    ``state`` is observed at read time. ``currently_applicable`` is separate from the
    retained outcome: it is true only while the attempt is leased and unexpired, its subject
    is current and (for an executor attempt) its registration is current. An old recorded
    lease is not current execution authority.
    """

    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt: WorkflowTaskAttempt = wire_field()
    attempt_digest: str = digest_field()
    state: ObservedState = wire_field()
    lease_expires_at_ms: int = wire_field()
    currently_applicable: bool = wire_field()
    subject_current: bool = wire_field()
    fence_supersession: FenceSupersession | None = wire_field()
    retained_result: RetainedResultView | None = wire_field()


class RecoveryKind(enum.Enum):
    """The mutation kinds a recovery read can be asked about."""

    CLAIM = "claim"
    HEARTBEAT = "heartbeat"
    CANCEL = "cancel"
    RECONCILE = "reconcile"
    RESULT = "result"


@attrs.frozen(kw_only=True)
class TaskRecoveryRequest:
    """Ask what is known about one mutation request (side-effect free, no request ID used).

    The attempt fields name the attempt the request was about; a claim names none (send
    ``null``): its attempt is the one the claim created, if it committed.
    """

    version: int = wire_field(version=True)
    kind: RecoveryKind = wire_field()
    request_id: str = id_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str | None = wire_field(max_len=ID_MAX_CHARS, pattern=_ID)
    attempt_digest: str | None = wire_field(max_len=64, pattern=r"[0-9a-f]{64}")
    execution_operation_id: str = id_field()
    fence: int | None = wire_field(lo=1)


@attrs.frozen(kw_only=True)
class TaskReadRequest:
    """Read one task of the route by its ID (side-effect free; consumes no request ID).

    The task may belong to an older subject of its Change (``qualification`` names such a
    task for ``prior_subject_unresolved``), so this is how a client finds the exact attempt a
    ``reconcile`` must name.
    """

    version: int = wire_field(version=True)
    task_id: str = id_field()


@attrs.frozen(kw_only=True)
class TaskView:
    """One task, its Change and subject currency, and its newest attempt (if any).

    ``state`` is the journal state; ``current_attempt`` is what a ``status`` read of the
    task's newest attempt returns (``null`` before the first claim).
    """

    task_id: str = id_field()
    task_digest: str = digest_field()
    step_id: str = id_field()
    change_id: str = id_field()
    change_version: int = wire_field(lo=1)
    subject_current: bool = wire_field()
    state: Literal["pending", "claimed", "finished", "cancelled"] = wire_field()
    current_attempt: AttemptView | None = wire_field()
