"""Queue statuses and the JSON views every ``agenttask.*`` verb answers with.

Views are frozen attrs classes whose fields carry their camelCase wire names, so
``taskcore.codec.unstructure`` (and the front door) produce the documented JSON. Times are
integer milliseconds since the Unix epoch (``...AtMs``). ``docs/queue.md`` shows each view.

>>> TaskStatus.DONE.terminal, TaskStatus.ESCALATED.terminal
(True, False)
>>> from taskcore.codec import unstructure
>>> unstructure(Grant(gate_id="ag_1", target_verb="repo.push", input_hash=None))
{'gateId': 'ag_1', 'targetVerb': 'repo.push', 'inputHash': None}
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from taskcore.codec import wire_field
from taskcore.limits import LEASE_WALLCLOCK_CAP_SECONDS, MAX_LEASE_EXTENSIONS

__all__ = [
    "ApprovalGateView",
    "BackoffView",
    "BulkResult",
    "ClaimResult",
    "ClearResult",
    "CreateManyResult",
    "EscalateResult",
    "ExtView",
    "FeedEntry",
    "FeedResult",
    "GateDecision",
    "GateStatus",
    "Grant",
    "GrantApplied",
    "LeaseHandle",
    "LeaseView",
    "LimitList",
    "LimitView",
    "ListResult",
    "MatterView",
    "PausedList",
    "PausedVerbView",
    "PhaseView",
    "PhaseWritten",
    "PruneResult",
    "RankResult",
    "SetWaitingResult",
    "TaskStatus",
    "TaskView",
    "VerbList",
    "VerbPaused",
    "VerbRegistered",
    "VerbView",
]


class TaskStatus(enum.Enum):
    """The six statuses of a queue task (the seed's spelling)."""

    QUEUED = "QUEUED"
    LEASED = "LEASED"
    ESCALATED = "ESCALATED"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        """Whether the work is over (``finished_at`` is set exactly for these)."""
        return self in _TERMINAL


_TERMINAL = frozenset({TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED})


class GateStatus(enum.Enum):
    """The life of a one-shot approval gate."""

    PENDING = "PENDING"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    CONSUMED = "CONSUMED"
    VOIDED = "VOIDED"


@attrs.frozen(kw_only=True)
class LeaseView:
    """The live lease of a ``LEASED`` task."""

    owner: str = wire_field(doc="token identity of the lease holder")
    expires_at_ms: int = wire_field(wire="expiresAtMs")
    heartbeat_at_ms: int = wire_field(wire="heartbeatAtMs")
    extensions: int = wire_field(doc="non-terminal renewals so far (the runaway guard)")
    first_leased_at_ms: int = wire_field(wire="firstLeasedAtMs")


@attrs.frozen(kw_only=True)
class BackoffView:
    """A retrying task's back-off (docs/queue.md "Retries")."""

    initial_ms: int = wire_field(wire="initialMs")
    max_ms: int = wire_field(wire="maxMs")
    multiplier: float = wire_field()


@attrs.frozen(kw_only=True)
class TaskView:
    """A queue task as every verb returns it.

    ``status`` is the effective status: a lease that expired reads as ``QUEUED`` with
    ``lease`` null. ``fence`` is the number of claims so far (the current lease's fence).
    """

    task_id: str = wire_field(wire="taskId")
    verb: str = wire_field()
    status: TaskStatus = wire_field()
    priority: int = wire_field(lo=None, hi=None)
    depth: int = wire_field()
    autonomy_ceiling: int = wire_field(wire="autonomyCeiling")
    parent_task_id: str | None = wire_field(wire="parentTaskId")
    run_id: str | None = wire_field(wire="runId")
    matter_id: str | None = wire_field(wire="matterId")
    matter_step_id: str | None = wire_field(wire="matterStepId")
    payload: Any = wire_field()
    checkpoint: Any = wire_field()
    last_error: str | None = wire_field(wire="lastError")
    created_by: str = wire_field(wire="createdBy")
    created_at_ms: int = wire_field(wire="createdAtMs")
    updated_at_ms: int = wire_field(wire="updatedAtMs")
    finished_at_ms: int | None = wire_field(wire="finishedAtMs")
    fence: int = wire_field()
    lease: LeaseView | None = wire_field()
    escalation_gate_id: str | None = wire_field(wire="escalationGateId")
    # scheduling and retries (docs/queue.md "Scheduled tasks", "Retries")
    run_at_ms: int | None = wire_field(
        default=None,
        wire="runAtMs",
        doc="not claimable before this time (epoch ms); null: claimable when queued",
    )
    attempt: int = wire_field(default=1, doc="the run this is (from 1)")
    max_attempts: int = wire_field(
        default=1, wire="maxAttempts", doc="runs before a failure is final (1: no retry)"
    )
    backoff: BackoffView | None = wire_field(
        default=None, doc="the wait between attempts, when maxAttempts is above 1"
    )
    # -- queueflow (issue 28): present only when set -------------------------------------
    unique_key: str | None = wire_field(default=None, wire="uniqueKey", omit_none=True)
    concurrency_key: str | None = wire_field(default=None, wire="concurrencyKey", omit_none=True)
    after: tuple[str, ...] | None = wire_field(
        default=None, omit_none=True, doc="the tasks this one runs after"
    )
    blocked_by: tuple[str, ...] | None = wire_field(
        default=None,
        wire="blockedBy",
        omit_none=True,
        doc="the tasks of after that are not DONE (a FAILED or CANCELLED one failed this task)",
    )
    deduplicated: bool | None = wire_field(
        default=None,
        omit_none=True,
        doc="true: the create matched this live task's uniqueKey and created nothing",
    )


@attrs.frozen(kw_only=True)
class CreateManyResult:
    """``agenttask.createMany``: what each create answered, in the order given."""

    tasks: tuple[TaskView, ...] = wire_field()


@attrs.frozen(kw_only=True)
class LimitView:
    """A concurrency key's limit and how many of its tasks hold a live lease now."""

    key: str = wire_field()
    max: int = wire_field()
    leased: int = wire_field(doc="tasks of the key holding a live lease now")
    set_by: str = wire_field(wire="setBy")
    set_at_ms: int = wire_field(wire="setAtMs")


@attrs.frozen(kw_only=True)
class LimitList:
    """``agenttask.limit.list``: every limit set in the workspace, by key."""

    limits: tuple[LimitView, ...] = wire_field()
    default_max: int = wire_field(
        wire="defaultMax", doc="the limit of a concurrencyKey no limit was set for"
    )


@attrs.frozen(kw_only=True)
class Grant:
    """An approved one-shot grant, handed to exactly one claim."""

    gate_id: str = wire_field(wire="gateId")
    target_verb: str | None = wire_field(wire="targetVerb")
    input_hash: str | None = wire_field(wire="inputHash")


@attrs.frozen(kw_only=True)
class LeaseHandle:
    """What a claim hands the worker: present ``fence`` on checkpoint, release, escalate.

    ``maxExtensions`` and ``wallClockCapMs`` are the runaway guard's bounds for this claim
    (ours, additive): the renewal after ``maxExtensions`` non-terminal checkpoints, or any
    renewal more than ``wallClockCapMs`` after the task was first leased, is refused with
    ``LEASE_RUNAWAY`` and the task is requeued; a terminal checkpoint is always accepted.
    """

    task_id: str = wire_field(wire="taskId")
    owner: str = wire_field()
    fence: int = wire_field()
    expires_at_ms: int = wire_field(wire="expiresAtMs")
    grant: Grant | None = wire_field(default=None)
    max_extensions: int = wire_field(
        default=MAX_LEASE_EXTENSIONS,
        wire="maxExtensions",
        doc="non-terminal renewals this claim may make; the next one is LEASE_RUNAWAY",
    )
    wall_clock_cap_ms: int = wire_field(
        default=LEASE_WALLCLOCK_CAP_SECONDS * 1000,
        wire="wallClockCapMs",
        doc="a renewal this long after the first lease is LEASE_RUNAWAY (see firstLeasedAtMs)",
    )


@attrs.frozen(kw_only=True)
class PhaseView:
    """One per-phase resume checkpoint."""

    phase_index: int = wire_field(wire="phaseIndex")
    phase_key: str = wire_field(wire="phaseKey")
    state: Any = wire_field()
    outputs: tuple[Any, ...] = wire_field()
    written_by: str = wire_field(wire="writtenBy")
    created_at_ms: int = wire_field(wire="createdAtMs")


@attrs.frozen(kw_only=True)
class ClaimResult:
    """``{"claimed": false}`` or the task, its lease handle and the latest phase checkpoint.

    An empty ``claimNext`` is encoded as exactly ``{"claimed": false}``.
    """

    claimed: bool = wire_field()
    task: TaskView | None = wire_field(default=None)
    lease: LeaseHandle | None = wire_field(default=None)
    resume: PhaseView | None = wire_field(default=None)


@attrs.frozen(kw_only=True)
class ListResult:
    """A page of tasks; pass ``nextCursor`` as ``cursor`` for the next page."""

    tasks: tuple[TaskView, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class ApprovalGateView:
    """An approval gate minted by ``agenttask.escalate``."""

    gate_id: str = wire_field(wire="gateId")
    task_id: str = wire_field(wire="taskId")
    status: GateStatus = wire_field()
    target_verb: str | None = wire_field(wire="targetVerb")
    input_hash: str | None = wire_field(wire="inputHash")
    reason: str | None = wire_field()
    requested_by: str = wire_field(wire="requestedBy")
    requested_at_ms: int = wire_field(wire="requestedAtMs")
    decided_by: str | None = wire_field(wire="decidedBy")
    decided_at_ms: int | None = wire_field(wire="decidedAtMs")
    note: str | None = wire_field()
    consumed_by: str | None = wire_field(wire="consumedBy")
    consumed_at_ms: int | None = wire_field(wire="consumedAtMs")


@attrs.frozen(kw_only=True)
class EscalateResult:
    """The escalated task and the approval gate it waits on."""

    task: TaskView = wire_field()
    gate: ApprovalGateView = wire_field()


@attrs.frozen(kw_only=True)
class GrantApplied:
    """``agenttask.gate.apply``: the consumed grant and the granted call's own result."""

    gate: ApprovalGateView = wire_field()
    verb: str = wire_field()
    result: Any = wire_field(doc="what the granted operation answered")


@attrs.frozen(kw_only=True)
class GateDecision:
    """An approval gate after an admin decided it, and its task."""

    gate: ApprovalGateView = wire_field()
    task: TaskView = wire_field()


@attrs.frozen(kw_only=True)
class RankResult:
    """The re-ranked task and the objective tokens its descriptor shares."""

    task: TaskView = wire_field()
    matched_tokens: tuple[str, ...] = wire_field(wire="matchedTokens")


@attrs.frozen(kw_only=True)
class FeedEntry:
    """One task of a feed: status, rationale and the autonomy it ran with.

    ``checkpoint`` and ``output`` (``checkpoint.output``) are filled only for the single-task
    read, which is owner-guarded; a matter feed discloses the reasoning chain, not the state.
    """

    task_id: str = wire_field(wire="taskId")
    verb: str = wire_field()
    status: TaskStatus = wire_field()
    created_by: str = wire_field(wire="createdBy")
    created_at_ms: int = wire_field(wire="createdAtMs")
    finished_at_ms: int | None = wire_field(wire="finishedAtMs")
    autonomy_exercised: int | None = wire_field(wire="autonomyExercised")
    rationale: str | None = wire_field()
    last_error: str | None = wire_field(wire="lastError")
    checkpoint: Any = wire_field(default=None)
    output: Any = wire_field(default=None)
    gate: ApprovalGateView | None = wire_field(
        default=None, doc="single-task feed: the task's approval gate and its decision"
    )


@attrs.frozen(kw_only=True)
class FeedResult:
    """A feed page: one task, one matter's tasks, or the workspace's non-matter tasks."""

    matter_id: str | None = wire_field(wire="matterId")
    entries: tuple[FeedEntry, ...] = wire_field()
    next_cursor: str | None = wire_field(wire="nextCursor")


@attrs.frozen(kw_only=True)
class PhaseWritten:
    """Where ``agenttask.checkpoint.write`` put the phase."""

    task_id: str = wire_field(wire="taskId")
    phase_index: int = wire_field(wire="phaseIndex")
    phase_key: str = wire_field(wire="phaseKey")
    created_at_ms: int = wire_field(wire="createdAtMs")


@attrs.frozen(kw_only=True)
class ClearResult:
    """How many phase checkpoints ``agenttask.checkpoint.clear`` deleted (0 is success)."""

    task_id: str = wire_field(wire="taskId")
    cleared: int = wire_field()


@attrs.frozen(kw_only=True)
class PruneResult:
    """How many phase checkpoints the retention sweep deleted, across workspaces."""

    pruned: int = wire_field()
    cutoff_ms: int = wire_field(wire="cutoffMs")


@attrs.frozen(kw_only=True)
class ExtView:
    """The one-to-one runtime/UI row of a task."""

    agent_task_id: str = wire_field(wire="agentTaskId")
    title: str = wire_field()
    prompt: str = wire_field()
    source_type: str = wire_field(wire="sourceType")
    source_id: str | None = wire_field(wire="sourceId")
    source_matter_id: str | None = wire_field(wire="sourceMatterId")
    source_step_id: str | None = wire_field(wire="sourceStepId")
    child_key: str | None = wire_field(wire="childKey")
    priority: int = wire_field(lo=None, hi=None)
    requires_human_review: bool = wire_field(wire="requiresHumanReview")
    waiting_for_children: bool = wire_field(wire="waitingForChildren")
    declared_child_keys: tuple[str, ...] = wire_field(wire="declaredChildKeys")
    claim_token_hash: str | None = wire_field(wire="claimTokenHash")
    claimed_at: int | None = wire_field(wire="claimedAt")
    cost_usd: float | None = wire_field(wire="costUsd")
    duration_ms: int | None = wire_field(wire="durationMs")
    tool_call_count: int | None = wire_field(wire="toolCallCount")
    result: Any = wire_field()
    progress_text: str | None = wire_field(wire="progressText")
    created_at_ms: int = wire_field(wire="createdAtMs")
    updated_at_ms: int = wire_field(wire="updatedAtMs")


@attrs.frozen(kw_only=True)
class SetWaitingResult:
    """Whether the waiting flag flipped (a repeat lands as ``changed: false``) and the row."""

    changed: bool = wire_field()
    ext: ExtView = wire_field()


@attrs.frozen(kw_only=True)
class VerbView:
    """A carrier verb tasks may be created with."""

    verb: str = wire_field()
    description: str = wire_field()
    built_in: bool = wire_field(wire="builtIn")


@attrs.frozen(kw_only=True)
class VerbRegistered:
    """The outcome of ``agenttask.verb.register``: ``created`` is false for a known verb."""

    verb: str = wire_field()
    created: bool = wire_field()


@attrs.frozen(kw_only=True)
class VerbList:
    """The carrier verbs of the workspace, built-in first."""

    verbs: tuple[VerbView, ...] = wire_field()


@attrs.frozen(kw_only=True)
class MatterView:
    """A matter: its objective and who may read its feed (besides workspace admins)."""

    matter_id: str = wire_field(wire="matterId")
    objective: str | None = wire_field()
    created_by: str = wire_field(wire="createdBy")
    created_at_ms: int = wire_field(wire="createdAtMs")
    readers: tuple[str, ...] = wire_field()


# -- paused verbs (docs/queue.md "Pause") ---------------------------------------------------------


@attrs.frozen(kw_only=True)
class PausedVerbView:
    """A paused carrier verb: claimNext hands out none of its tasks."""

    verb: str = wire_field()
    paused_by: str = wire_field(wire="pausedBy")
    paused_at_ms: int = wire_field(wire="pausedAtMs")


@attrs.frozen(kw_only=True)
class VerbPaused:
    """What pause and resume answer: the verb, whether it is paused now, whether that changed."""

    verb: str = wire_field()
    paused: bool = wire_field()
    changed: bool = wire_field(doc="false: it already was (pause and resume are idempotent)")


@attrs.frozen(kw_only=True)
class PausedList:
    """``agenttask.paused``: the workspace's paused verbs, by name."""

    verbs: tuple[PausedVerbView, ...] = wire_field()


# -- bulk acts (docs/queue.md "Bulk requeue and cancel") ------------------------------------------


@attrs.frozen(kw_only=True)
class BulkResult:
    """What ``agenttask.requeueMany`` / ``cancelMany`` changed (or, dry, would change)."""

    task_ids: tuple[str, ...] = wire_field(
        wire="taskIds", doc="the tasks changed (each audited as its own call), in creation order"
    )
    skipped: int = wire_field(doc="tasks the filter matched in a status the act does not apply to")
    more: bool = wire_field(doc="more tasks match past limit: call again")
    dry_run: bool = wire_field(wire="dryRun")
