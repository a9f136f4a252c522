"""Inputs of the ``agenttask.*`` verbs, with the seed's camelCase keys.

Each class is decoded strictly by the front door (unknown keys, wrong types and bounds are
refused with a JSON path before a handler runs). A field whose default is ``None`` is
optional; sending ``null`` is the same as leaving it out. ``fence`` (on checkpoint, release,
escalate and checkpoint.write) is ours: the value from the claim's lease handle.

>>> from taskcore.codec import decode
>>> decode(CheckpointIn, b'{"taskId": "at_1", "status": "DONE", "fence": 2}').status
'DONE'
>>> decode(ReorderIn, b'{"taskId": "at_1", "priority": -3}').priority
-3
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from taskcore.codec import wire_field
from taskcore.limits import (
    BACKOFF_INITIAL_DEFAULT_MS,
    BACKOFF_MAX_DEFAULT_MS,
    BACKOFF_MAX_MS,
    BACKOFF_MULTIPLIER_DEFAULT,
    BACKOFF_MULTIPLIER_MAX,
    CHECKPOINT_PRUNE_DEFAULT_DAYS,
    CHECKPOINT_PRUNE_MAX_DAYS,
    CLAIM_WAIT_MAX_MS,
    CONCURRENCY_LIMIT_MAX,
    CREATE_MANY_MAX,
    EXT_CHILD_KEYS_MAX,
    EXT_PROMPT_MAX_CHARS,
    EXT_TITLE_MAX_CHARS,
    ID_MAX_CHARS,
    LEASE_MAX_MS,
    LEASE_MIN_MS,
    QUEUE_AFTER_MAX,
    QUEUE_ATTEMPTS_MAX,
    QUEUE_BULK_MAX,
    QUEUE_DELAY_MAX_MS,
    QUEUE_KEY_MAX_CHARS,
    QUEUE_LIST_MAX,
    QUEUE_PRIORITY_MAX,
    QUEUE_PRIORITY_MIN,
    REASON_MAX_CHARS,
    TEXT_MAX_CHARS,
    U64_MAX,
    UNIQUE_FOR_MAX_MS,
)
from taskcore.queue.types import TaskStatus

__all__ = [
    "ID_PATTERN",
    "VERB_PATTERN",
    "BackoffIn",
    "BulkIn",
    "CheckpointIn",
    "CheckpointWriteIn",
    "ClaimIn",
    "ClaimNextIn",
    "CreateIn",
    "CreateManyIn",
    "EscalateIn",
    "ExtCreateIn",
    "ExtSetWaitingIn",
    "ExtUpdateIn",
    "FeedIn",
    "GateApplyIn",
    "GateDecisionIn",
    "GateRef",
    "GateRejectIn",
    "LimitSetIn",
    "ListIn",
    "MatterCreateIn",
    "MatterGrantIn",
    "MatterRef",
    "NoInput",
    "PruneIn",
    "ReleaseIn",
    "ReorderIn",
    "TaskRef",
    "VerbRef",
    "VerbRegisterIn",
]

ID_PATTERN = rf"[A-Za-z0-9._-]{{1,{ID_MAX_CHARS}}}"
"""Identifiers: task, run, matter, step, gate and token ids."""
VERB_PATTERN = rf"[A-Za-z][A-Za-z0-9._-]{{0,{ID_MAX_CHARS - 1}}}"
"""Carrier verbs (``agent.run``) and escalation target verbs."""
HEX64_PATTERN = r"[0-9a-f]{64}"


def _id(wire: str | None = None, *, required: bool = False) -> Any:
    if required:
        return wire_field(wire=wire, pattern=ID_PATTERN)
    return wire_field(default=None, wire=wire, pattern=ID_PATTERN)


def _fence() -> Any:
    return wire_field(default=None, lo=1, hi=U64_MAX, doc="fence from the claim's lease handle")


@attrs.frozen(kw_only=True)
class NoInput:
    """An operation without input fields (``{}``)."""


@attrs.frozen(kw_only=True)
class TaskRef:
    """``{taskId}``: get, requeue, cancel, rankByObjective, checkpoint.clear."""

    task_id: str = _id("taskId", required=True)


# -- scheduling and retries on create (docs/queue.md "Scheduled tasks", "Retries") -------------


@attrs.frozen(kw_only=True)
class BackoffIn:
    """``backoff`` of ``agenttask.create``: the wait before a retry, full jitter.

    The wait after attempt n fails is uniform in ``[0, min(maxMs, initialMs * multiplier **
    (n - 1))]``.
    """

    initial_ms: int = wire_field(
        default=BACKOFF_INITIAL_DEFAULT_MS, wire="initialMs", lo=1, hi=BACKOFF_MAX_MS
    )
    max_ms: int = wire_field(default=BACKOFF_MAX_DEFAULT_MS, wire="maxMs", lo=1, hi=BACKOFF_MAX_MS)
    multiplier: float = wire_field(
        default=BACKOFF_MULTIPLIER_DEFAULT,
        doc=f"growth per attempt, 1.0 to {BACKOFF_MULTIPLIER_MAX}",
    )


@attrs.frozen(kw_only=True)
class CreateIn:
    """``agenttask.create``: a task for a registered carrier verb."""

    verb: str = wire_field(pattern=VERB_PATTERN)
    payload: Any = wire_field(default=None, doc="JSON, at most QUEUE_PAYLOAD_MAX_BYTES")
    parent_task_id: str | None = _id("parentTaskId")
    run_id: str | None = _id("runId")
    matter_id: str | None = _id("matterId")
    matter_step_id: str | None = _id("matterStepId")
    # scheduling and retries (sched)
    run_at: int | None = wire_field(
        default=None, wire="runAt", doc="epoch ms: not claimable before (runAt or delayMs)"
    )
    delay_ms: int | None = wire_field(
        default=None,
        wire="delayMs",
        lo=0,
        hi=QUEUE_DELAY_MAX_MS,
        doc="not claimable for this many ms (runAt or delayMs, not both)",
    )
    max_attempts: int | None = wire_field(
        default=None,
        wire="maxAttempts",
        lo=1,
        hi=QUEUE_ATTEMPTS_MAX,
        doc="runs before a failure is final (default 1: no retry)",
    )
    backoff: BackoffIn | None = wire_field(
        default=None, doc="back-off between attempts (with maxAttempts above 1)"
    )
    # -- queueflow (issue 28): unique tasks, concurrency keys, dependencies ------------------
    unique_key: str | None = wire_field(
        default=None,
        wire="uniqueKey",
        min_len=1,
        max_len=QUEUE_KEY_MAX_CHARS,
        doc="a create whose key matches a live task of the workspace answers that task",
    )
    unique_for: int | None = wire_field(
        default=None,
        wire="uniqueFor",
        hi=UNIQUE_FOR_MAX_MS,
        doc="ms the uniqueKey keeps holding past the task's end (needs uniqueKey)",
    )
    concurrency_key: str | None = wire_field(
        default=None,
        wire="concurrencyKey",
        min_len=1,
        max_len=QUEUE_KEY_MAX_CHARS,
        doc="claimNext leases at most the key's limit (agenttask.limit.set) of these at once",
    )
    after: tuple[str, ...] | None = wire_field(
        default=None,
        max_len=QUEUE_AFTER_MAX,
        item_pattern=ID_PATTERN,
        doc="task ids of this workspace that must all be DONE first",
    )


@attrs.frozen(kw_only=True)
class CreateManyIn:
    """``agenttask.createMany``: up to CREATE_MANY_MAX creates, one transaction, all or nothing."""

    tasks: tuple[CreateIn, ...] = wire_field(min_len=1, max_len=CREATE_MANY_MAX)


@attrs.frozen(kw_only=True)
class LimitSetIn:
    """``agenttask.limit.set``: the most leased tasks a concurrency key may have (admin)."""

    key: str = wire_field(min_len=1, max_len=QUEUE_KEY_MAX_CHARS)
    max: int = wire_field(hi=CONCURRENCY_LIMIT_MAX)


@attrs.frozen(kw_only=True)
class ListIn:
    """``agenttask.list``: filter by effective status and matter; page with ``cursor``."""

    status: TaskStatus | None = wire_field(default=None)
    matter_id: str | None = _id("matterId")
    cursor: str | None = wire_field(default=None, pattern=ID_PATTERN)
    limit: int | None = wire_field(default=None, lo=1, hi=QUEUE_LIST_MAX)


def _lease_ms() -> Any:
    return wire_field(
        default=None,
        wire="leaseMs",
        lo=LEASE_MIN_MS,
        hi=LEASE_MAX_MS,
        doc="lease length in ms (default LEASE_DEFAULT_MS, capped by the service)",
    )


@attrs.frozen(kw_only=True)
class ClaimIn:
    """``agenttask.claim``: lease one task (``leaseMs`` is ours; renewals keep the length)."""

    task_id: str = _id("taskId", required=True)
    lease_ms: int | None = _lease_ms()


@attrs.frozen(kw_only=True)
class ClaimNextIn:
    """``agenttask.claimNext``: optionally only tasks of one carrier verb; optionally wait."""

    verb: str | None = wire_field(default=None, pattern=VERB_PATTERN)
    lease_ms: int | None = _lease_ms()
    wait_ms: int | None = wire_field(
        default=None,
        wire="waitMs",
        lo=0,
        hi=CLAIM_WAIT_MAX_MS,
        doc="when nothing is claimable, wait up to this many ms for a task (default 0: "
        "answer at once)",
    )


@attrs.frozen(kw_only=True)
class CheckpointIn:
    """``agenttask.checkpoint``: renew (optionally persisting state) or finish."""

    task_id: str = _id("taskId", required=True)
    checkpoint: Any = wire_field(default=None, doc="JSON state; absent keeps the existing one")
    status: Literal["DONE", "FAILED"] | None = wire_field(default=None)
    last_error: str | None = wire_field(default=None, wire="lastError", max_len=TEXT_MAX_CHARS)
    fence: int | None = _fence()


@attrs.frozen(kw_only=True)
class ReleaseIn:
    """``agenttask.release``: give the lease back."""

    task_id: str = _id("taskId", required=True)
    fence: int | None = _fence()


@attrs.frozen(kw_only=True)
class EscalateIn:
    """``agenttask.escalate``: ask an admin to approve an over-autonomy action."""

    task_id: str = _id("taskId", required=True)
    target_verb: str | None = wire_field(default=None, wire="targetVerb", pattern=VERB_PATTERN)
    input_hash: str | None = wire_field(default=None, wire="inputHash", pattern=HEX64_PATTERN)
    reason: str | None = wire_field(default=None, max_len=REASON_MAX_CHARS)
    fence: int | None = _fence()
    target_input: dict[str, Any] | None = wire_field(
        default=None,
        wire="targetInput",
        doc="ours: the call's input object; the gate keeps only its inputHash (computed here)",
    )


@attrs.frozen(kw_only=True)
class ReorderIn:
    """``agenttask.reorder``: set the priority (higher drains first)."""

    task_id: str = _id("taskId", required=True)
    priority: int = wire_field(lo=QUEUE_PRIORITY_MIN, hi=QUEUE_PRIORITY_MAX)


@attrs.frozen(kw_only=True)
class FeedIn:
    """``agenttask.feed``: one task (``taskId``), one matter, or the non-matter feed."""

    task_id: str | None = _id("taskId")
    matter_id: str | None = _id("matterId")
    cursor: str | None = wire_field(default=None, pattern=ID_PATTERN)
    limit: int | None = wire_field(default=None, lo=1, hi=QUEUE_LIST_MAX)


@attrs.frozen(kw_only=True)
class CheckpointWriteIn:
    """``agenttask.checkpoint.write``: append a per-phase resume checkpoint."""

    task_id: str = _id("taskId", required=True)
    phase_key: str = wire_field(wire="phaseKey", pattern=ID_PATTERN)
    state: Any = wire_field(doc="JSON, at most CHECKPOINT_STATE_MAX_BYTES")
    outputs: tuple[Any, ...] = wire_field(doc="JSON array, at most CHECKPOINT_OUTPUTS_MAX_BYTES")
    fence: int | None = _fence()


@attrs.frozen(kw_only=True)
class PruneIn:
    """``agenttask.checkpoint.prune``: delete phase checkpoints older than N days."""

    older_than_days: int = wire_field(
        default=CHECKPOINT_PRUNE_DEFAULT_DAYS,
        wire="olderThanDays",
        lo=1,
        hi=CHECKPOINT_PRUNE_MAX_DAYS,
    )


@attrs.frozen(kw_only=True)
class ExtCreateIn:
    """``agenttask.ext.create``: the task's runtime/UI row, written after the task."""

    agent_task_id: str = _id("agentTaskId", required=True)
    title: str = wire_field(min_len=1, max_len=EXT_TITLE_MAX_CHARS)
    prompt: str = wire_field(max_len=EXT_PROMPT_MAX_CHARS)
    source_type: str = wire_field(wire="sourceType", pattern=ID_PATTERN)
    source_id: str | None = _id("sourceId")
    source_matter_id: str | None = _id("sourceMatterId")
    source_step_id: str | None = _id("sourceStepId")
    child_key: str | None = _id("childKey")
    priority: int = wire_field(default=0, lo=QUEUE_PRIORITY_MIN, hi=QUEUE_PRIORITY_MAX)
    requires_human_review: bool = wire_field(default=False, wire="requiresHumanReview")


@attrs.frozen(kw_only=True)
class ExtSetWaitingIn:
    """``agenttask.ext.setWaiting``: park (``waiting: true``) or wake the row."""

    agent_task_id: str = _id("agentTaskId", required=True)
    waiting: bool = wire_field()
    declared_child_keys: tuple[str, ...] | None = wire_field(
        default=None,
        wire="declaredChildKeys",
        max_len=EXT_CHILD_KEYS_MAX,
        item_pattern=ID_PATTERN,
    )


@attrs.frozen(kw_only=True)
class ExtUpdateIn:
    """``agenttask.ext.update``: a partial, last-write-wins patch of the supplied keys."""

    agent_task_id: str = _id("agentTaskId", required=True)
    claim_token_hash: str | None = wire_field(
        default=None, wire="claimTokenHash", pattern=HEX64_PATTERN
    )
    claimed_at: int | None = wire_field(default=None, wire="claimedAt")
    cost_usd: float | None = wire_field(default=None, wire="costUsd")
    duration_ms: int | None = wire_field(default=None, wire="durationMs")
    tool_call_count: int | None = wire_field(default=None, wire="toolCallCount")
    result: Any = wire_field(default=None, doc="JSON, at most QUEUE_PAYLOAD_MAX_BYTES")
    progress_text: str | None = wire_field(
        default=None, wire="progressText", max_len=TEXT_MAX_CHARS
    )


# -- admin ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class VerbRegisterIn:
    """``agenttask.verb.register``: allow tasks of a new carrier verb in this workspace."""

    verb: str = wire_field(pattern=VERB_PATTERN)
    description: str = wire_field(default="", max_len=REASON_MAX_CHARS)


@attrs.frozen(kw_only=True)
class BulkIn:
    """``agenttask.requeueMany`` / ``cancelMany``: the tasks a listing filter matches.

    The filter of ``agenttask.list`` and the board's backlog (``observe.backlog``): effective
    status, carrier verb, matter. At most ``limit`` (default and bound ``QUEUE_BULK_MAX``)
    tasks of the filter are looked at, in drain order; ``dryRun`` answers what would change and changes nothing (the
    board's confirmation step).
    """

    status: TaskStatus | None = wire_field(default=None)
    verb: str | None = wire_field(default=None, pattern=VERB_PATTERN)
    matter_id: str | None = _id("matterId")
    limit: int | None = wire_field(default=None, lo=1, hi=QUEUE_BULK_MAX)
    dry_run: bool = wire_field(
        default=False, wire="dryRun", doc="list what would change, change nothing"
    )


@attrs.frozen(kw_only=True)
class VerbRef:
    """``{verb}``: ``agenttask.pause`` / ``agenttask.resume`` (docs/queue.md "Pause")."""

    verb: str = wire_field(pattern=VERB_PATTERN)


@attrs.frozen(kw_only=True)
class GateRef:
    """``{gateId}``: one approval gate."""

    gate_id: str = _id("gateId", required=True)


@attrs.frozen(kw_only=True)
class GateDecisionIn:
    """``agenttask.gate.approve``: approve a pending approval gate (once)."""

    gate_id: str = _id("gateId", required=True)
    note: str | None = wire_field(default=None, max_len=REASON_MAX_CHARS)


@attrs.frozen(kw_only=True)
class GateRejectIn:
    """``agenttask.gate.reject``: deny a pending approval gate (once), saying why."""

    gate_id: str = _id("gateId", required=True)
    note: str = wire_field(
        min_len=1, max_len=REASON_MAX_CHARS, doc="the reason, shown to the task's creator"
    )


@attrs.frozen(kw_only=True)
class GateApplyIn:
    """``agenttask.gate.apply``: make the one call an approved grant names, consuming it."""

    task_id: str = _id("taskId", required=True)
    gate_id: str = _id("gateId", required=True)
    verb: str = wire_field(pattern=VERB_PATTERN, doc="the grant's targetVerb")
    input: dict[str, Any] = wire_field(
        doc="the call's input; its canonical SHA-256 must equal the grant's inputHash"
    )
    fence: int | None = _fence()


@attrs.frozen(kw_only=True)
class MatterCreateIn:
    """``agenttask.matter.create``: a matter with an optional objective."""

    matter_id: str | None = _id("matterId")
    objective: str | None = wire_field(default=None, max_len=TEXT_MAX_CHARS)


@attrs.frozen(kw_only=True)
class MatterRef:
    """``{matterId}``: one matter."""

    matter_id: str = _id("matterId", required=True)


@attrs.frozen(kw_only=True)
class MatterGrantIn:
    """``agenttask.matter.grant`` / ``.revoke``: who (a token id) may read a matter's feed."""

    matter_id: str = _id("matterId", required=True)
    reader: str = wire_field(pattern=ID_PATTERN)
