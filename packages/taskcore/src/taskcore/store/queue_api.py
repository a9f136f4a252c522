"""The agent task queue storage interface: records and a protocol, no SQL.

The queue domain (:mod:`taskcore.queue`) decides every transition; this interface only
persists rows and answers the few indexed questions the domain asks (the best claimable task,
a page of tasks, the next phase index). Every method that touches workspace data takes the
workspace explicitly and puts it in the predicate, so a row of another workspace is never
returned, changed or counted. The one exception is :meth:`QueueStore.prune_phases` with
``workspace=None``, the platform-wide retention sweep (operator jobs only, never a front-door
call).

JSON documents (payload, checkpoint, phase state, ext result) travel as compact JSON text;
the domain parses and bounds them.

Updates are optimistic: :meth:`QueueStore.update_task` writes only if the row still carries
the ``version`` the domain read, and bumps it. On SQLite the writer is already serialized by
``BEGIN IMMEDIATE``; on a server database the same compare-and-set makes a lost race visible
as ``False`` instead of a silent overwrite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import attrs

if TYPE_CHECKING:
    from taskcore.store.queueflow_api import ClaimContext, FlowRecord

__all__ = [
    "ApprovalGateRecord",
    "ExtPatch",
    "ExtRecord",
    "MatterReaderRecord",
    "MatterRecord",
    "PausedVerbRecord",
    "PhaseRecord",
    "QueueCount",
    "QueueStore",
    "TaskRecord",
    "VerbRecord",
]


@attrs.frozen(kw_only=True)
class TaskRecord:
    """One ``queue_task`` row.

    ``status`` is the stored status; a ``LEASED`` row whose ``lease_expires_at_ms`` has passed
    is claimable again (expiry is observed at read time by the domain). ``fence`` grows by one
    on every claim and never goes back. ``version`` grows on every update (optimistic
    concurrency). ``seq`` is the insertion order, assigned by the store.
    """

    task_id: str
    workspace: str
    verb: str
    payload_json: str | None
    status: str
    priority: int
    autonomy_ceiling: int
    depth: int
    parent_task_id: str | None
    run_id: str | None
    matter_id: str | None
    matter_step_id: str | None
    created_by: str
    created_at_ms: int
    updated_at_ms: int
    finished_at_ms: int | None = None
    lease_owner: str | None = None
    lease_expires_at_ms: int | None = None
    heartbeat_at_ms: int | None = None
    lease_extensions: int = 0
    first_leased_at_ms: int | None = None
    fence: int = 0
    exercised_autonomy: int | None = None
    checkpoint_json: str | None = None
    last_error: str | None = None
    escalation_gate_id: str | None = None
    # -- scheduling and retries (queue migration 5; docs/queue.md "Scheduled tasks",
    # "Retries"): not claimable before ``run_at_ms``; ``attempt`` counts runs from 1 up to
    # ``max_attempts``; ``retry_delay_ms`` is the back-off drawn at claim, applied if the lease
    # lapses (a lapsed lease of a retrying task is claimable again that long after expiry).
    run_at_ms: int | None = None
    attempt: int = 1
    max_attempts: int = 1
    backoff_initial_ms: int = 1000
    backoff_max_ms: int = 3_600_000
    backoff_multiplier: float = 2.0
    retry_delay_ms: int = 0
    version: int = 0
    seq: int = 0


@attrs.frozen(kw_only=True)
class VerbRecord:
    """A carrier verb an admin registered for a workspace (``agent.run`` is built in)."""

    workspace: str
    verb: str
    description: str
    registered_by: str
    registered_at_ms: int


@attrs.frozen(kw_only=True)
class MatterRecord:
    """A matter: an objective that tasks serve, and (in readers) who may read its feed."""

    workspace: str
    matter_id: str
    objective: str | None
    created_by: str
    created_at_ms: int


@attrs.frozen(kw_only=True)
class MatterReaderRecord:
    """A read grant on a matter for one token identity."""

    workspace: str
    matter_id: str
    reader: str
    granted_by: str
    granted_at_ms: int


@attrs.frozen(kw_only=True)
class ApprovalGateRecord:
    """A one-shot approval gate minted by ``agenttask.escalate``.

    ``status`` is ``PENDING``, ``APPROVED``, ``REJECTED``, ``CONSUMED`` or ``VOIDED``.
    """

    gate_id: str
    workspace: str
    task_id: str
    target_verb: str | None
    input_hash: str | None
    reason: str | None
    status: str
    requested_by: str
    requested_at_ms: int
    decided_by: str | None = None
    decided_at_ms: int | None = None
    decision_note: str | None = None
    consumed_by: str | None = None
    consumed_at_ms: int | None = None
    consumed_fence: int | None = None
    version: int = 0


@attrs.frozen(kw_only=True)
class PhaseRecord:
    """One per-phase resume checkpoint (``agenttask.checkpoint.write``)."""

    workspace: str
    task_id: str
    phase_index: int
    phase_key: str
    state_json: str
    outputs_json: str
    written_by: str
    created_at_ms: int


@attrs.frozen(kw_only=True)
class ExtRecord:
    """The one-to-one runtime/UI row of a task (``agenttask.ext.*``).

    ``declared_child_keys_json`` is a JSON array of strings; ``claim_token_hash`` is a
    SHA-256 (64 lowercase hex) computed by the frontend, never a plaintext token.
    """

    agent_task_id: str
    workspace: str
    title: str
    prompt: str
    source_type: str
    source_id: str | None
    source_matter_id: str | None
    source_step_id: str | None
    child_key: str | None
    priority: int
    requires_human_review: bool
    created_at_ms: int
    updated_at_ms: int
    waiting_for_children: bool = False
    declared_child_keys_json: str = "[]"
    claim_token_hash: str | None = None
    claimed_at_ms: int | None = None
    cost_usd: float | None = None
    duration_ms: int | None = None
    tool_call_count: int | None = None
    result_json: str | None = None
    progress_text: str | None = None


@attrs.frozen(kw_only=True)
class ExtPatch:
    """A partial ext update: only fields that are not ``None`` are written."""

    claim_token_hash: str | None = None
    claimed_at_ms: int | None = None
    cost_usd: float | None = None
    duration_ms: int | None = None
    tool_call_count: int | None = None
    result_json: str | None = None
    progress_text: str | None = None


@attrs.frozen(kw_only=True)
class PausedVerbRecord:
    """A carrier verb an admin paused: ``claimNext`` hands out none of its tasks."""

    workspace: str
    verb: str
    paused_by: str
    paused_at_ms: int


@attrs.frozen(kw_only=True)
class QueueCount:
    """A count of one workspace's rows in one state (metrics, the board's summary)."""

    workspace: str
    status: str
    count: int


class QueueStore(Protocol):
    """Persistence of queue tasks, carrier verbs, matters, approval gates, phases, ext rows."""

    # -- tasks ------------------------------------------------------------------------------
    def insert_task(self, task: TaskRecord, *, with_seq: bool = True) -> TaskRecord:
        """Insert a new task; return it with its assigned ``seq``.

        ``with_seq=False``: the caller reads no ``seq`` back (it may be 0), so a
        store may send the insert with the transaction's next statement or its ``COMMIT``
        (PostgreSQL's shared writer); a duplicate id is still ``ALREADY_EXISTS``.
        """
        ...

    def read_ahead(self, workspace: str, task_id: str) -> None:
        """The call's next read after its token re-check is ``get_task(..., for_update=True)``.

        A hint given before the call's first statement: a store may send that read with it
        (PostgreSQL's shared writer, one round trip fewer); SQLite does nothing.
        """
        ...

    def get_task(
        self, workspace: str, task_id: str, *, for_update: bool = False
    ) -> TaskRecord | None:
        """Return the task of ``workspace`` with ``task_id``, or ``None``.

        ``for_update``: the caller writes this row next (``checkpoint``, ``release``). On
        PostgreSQL a shared writer then holds it row-locked until it commits, so its
        compare-and-set cannot miss; SQLite has one writer at a time anyway.
        """
        ...

    def update_task(self, task: TaskRecord, *, before: TaskRecord | None = None) -> bool:
        """Write ``task`` if the row still has the version it was read at; bump the version.

        Without ``before``: every mutable column, if the row still has ``task.version``; the
        stored version becomes ``task.version + 1``. With ``before`` (the row as read in this
        transaction) ``task`` is its next version (``task.version == before.version + 1``):
        only the mutable columns that differ from ``before`` are written, if the row still
        has ``before.version``. Return whether the row was written.
        """
        ...

    def best_claimable(
        self,
        workspace: str,
        *,
        max_autonomy: int,
        autonomy: int,
        verb: str | None,
        now_ms: int,
        paused: tuple[str, ...] = (),
        gated: bool = False,
    ) -> TaskRecord | None:
        """Return the task ``claimNext`` should take, or ``None``.

        Candidates are ``QUEUED`` tasks due at ``now_ms`` (no ``run_at_ms`` ahead) and
        ``LEASED`` tasks whose lease expired at or before ``now_ms`` (for a retrying task:
        ``retry_delay_ms`` after that, and only below its last attempt), with
        ``autonomy <= autonomy_ceiling <= max_autonomy``, (if given) the carrier ``verb``, and
        none of the ``paused`` verbs. The best is the highest priority, then the oldest
        (``created_at_ms``, then ``seq``). With ``gated`` (the workspace has tasks with parents
        or concurrency keys: ``queueflow``), a candidate must also pass the flow gate
        (:data:`taskcore.store.sqlite_queueflow.CLAIM_GATE`): every parent ``DONE``, its key
        below its limit.
        """
        ...

    def claim_candidate(
        self,
        workspace: str,
        *,
        max_autonomy: int,
        autonomy: int,
        verb: str | None,
        now_ms: int,
        paused: tuple[str, ...] = (),
        gated: bool = False,
    ) -> tuple[TaskRecord | None, FlowRecord | None]:
        """:meth:`best_claimable`, and the ``queueflow`` row of the task it found (or ``None``).

        PostgreSQL reads both in one statement. A task's flow row is written with the task
        and, while the task is not terminal, its ``gated`` never changes, so the row read
        with the (row-locked) candidate is the row as it stands.
        """
        ...

    def claim_opening(
        self,
        workspace: str,
        *,
        max_autonomy: int,
        autonomy: int,
        verb: str | None,
        now_ms: int,
    ) -> tuple[ClaimContext, TaskRecord | None, FlowRecord | None]:
        """``claimNext``'s first step: the claim context and, unless it is gated, the claim.

        The workspace's :meth:`QueueFlowStore.claim_context` and, when it is not gated and
        ``verb`` (if any) is not paused, :meth:`claim_candidate` with the paused verbs left
        out (the task row-locked). Gated, or for a paused ``verb``: no task. PostgreSQL reads
        both in one statement.
        """
        ...

    def next_due(self, workspace: str, now_ms: int) -> int | None:
        """The earliest time after ``now_ms`` a task may become claimable by time alone.

        A live lease that will expire, a task whose ``run_at_ms`` is ahead (``None``: none).
        A waiting ``claimNext`` is woken then (nothing commits when time passes).
        """
        ...

    # -- paused verbs (docs/queue.md "Pause") ----------------------------------------------
    def pause_verb(self, record: PausedVerbRecord) -> bool:
        """Pause a verb; return whether it was not paused already."""
        ...

    def resume_verb(self, workspace: str, verb: str) -> bool:
        """Resume a verb (a commit that may free tasks: signals); return whether it was paused."""
        ...

    def is_paused(self, workspace: str, verb: str) -> bool:
        """Whether ``verb`` is paused in ``workspace``."""
        ...

    def paused_verbs(self, workspace: str) -> tuple[PausedVerbRecord, ...]:
        """The paused verbs of ``workspace``, sorted by name."""
        ...

    def list_tasks(
        self,
        workspace: str,
        *,
        status: str | None,
        matter_id: str | None,
        non_matter_only: bool,
        after_seq: int | None,
        limit: int,
        now_ms: int,
    ) -> tuple[TaskRecord, ...]:
        """Return up to ``limit`` tasks in insertion order, after ``after_seq``.

        ``status`` filters on the *effective* status: an expired ``LEASED`` row counts as
        ``QUEUED``. ``matter_id`` keeps one matter's tasks; ``non_matter_only`` keeps tasks
        without a matter.
        """
        ...

    # -- carrier verbs ----------------------------------------------------------------------
    def get_verb(self, workspace: str, verb: str) -> VerbRecord | None:
        """Return the registered verb, or ``None``."""
        ...

    def insert_verb(self, record: VerbRecord) -> None:
        """Register a verb (the caller checked it is new)."""
        ...

    def list_verbs(self, workspace: str) -> tuple[VerbRecord, ...]:
        """Return the registered verbs of ``workspace``, sorted by name."""
        ...

    # -- matters ----------------------------------------------------------------------------
    def insert_matter(self, record: MatterRecord) -> None:
        """Create a matter (the caller checked it is new)."""
        ...

    def get_matter(self, workspace: str, matter_id: str) -> MatterRecord | None:
        """Return the matter, or ``None``."""
        ...

    def add_reader(self, record: MatterReaderRecord) -> bool:
        """Grant read; return whether the grant is new."""
        ...

    def remove_reader(self, workspace: str, matter_id: str, reader: str) -> bool:
        """Withdraw a grant; return whether one existed."""
        ...

    def is_reader(self, workspace: str, matter_id: str, reader: str) -> bool:
        """Return whether ``reader`` holds a read grant on the matter."""
        ...

    def list_readers(self, workspace: str, matter_id: str) -> tuple[str, ...]:
        """Return the readers of a matter, sorted."""
        ...

    # -- approval gates ---------------------------------------------------------------------
    def insert_gate(self, record: ApprovalGateRecord) -> None:
        """Store a new approval gate."""
        ...

    def get_gate(self, workspace: str, gate_id: str) -> ApprovalGateRecord | None:
        """Return the approval gate, or ``None``."""
        ...

    def update_gate(self, record: ApprovalGateRecord) -> bool:
        """Write the gate if it still has ``record.version``; bump the version."""
        ...

    # -- per-phase checkpoints --------------------------------------------------------------
    def next_phase_index(self, workspace: str, task_id: str) -> int:
        """Return one more than the task's highest phase index (0 for the first)."""
        ...

    def insert_phase(self, record: PhaseRecord) -> None:
        """Append a phase checkpoint."""
        ...

    def latest_phase(self, workspace: str, task_id: str) -> PhaseRecord | None:
        """Return the task's phase checkpoint with the highest index, or ``None``."""
        ...

    def clear_phases(self, workspace: str, task_id: str) -> int:
        """Delete every phase checkpoint of the task; return how many were deleted."""
        ...

    def prune_phases(self, before_ms: int, *, workspace: str | None) -> int:
        """Delete phase checkpoints created before ``before_ms`` in ``workspace``.

        ``workspace=None`` sweeps *every* workspace (the operator's retention job only).
        """
        ...

    # -- ext rows ---------------------------------------------------------------------------
    def insert_ext(self, record: ExtRecord) -> None:
        """Store the ext row of a task (the caller checked there is none)."""
        ...

    def get_ext(self, workspace: str, agent_task_id: str) -> ExtRecord | None:
        """Return the ext row of a task, or ``None``."""
        ...

    def set_waiting(
        self,
        workspace: str,
        agent_task_id: str,
        *,
        waiting: bool,
        declared_child_keys_json: str | None,
        now_ms: int,
    ) -> bool:
        """Flip ``waiting_for_children`` to ``waiting`` only if it is ``not waiting`` now.

        ``declared_child_keys_json`` (when not ``None``) is written in the same statement.
        Return whether the row changed.
        """
        ...

    def patch_ext(self, workspace: str, agent_task_id: str, patch: ExtPatch, now_ms: int) -> bool:
        """Write the non-``None`` fields of ``patch``; return whether the row exists."""
        ...

    # -- operator reads ---------------------------------------------------------------------
    def backlog(
        self,
        workspace: str,
        *,
        status: str | None,
        verb: str | None,
        matter_id: str | None,
        after: TaskRecord | None,
        limit: int,
        now_ms: int,
    ) -> tuple[TaskRecord, ...]:
        """Return up to ``limit`` tasks in drain order, after the task ``after``.

        Drain order is ``claimNext``'s: priority descending, then ``created_at_ms``, then
        ``seq``. ``status`` filters on the effective status as :meth:`list_tasks` does;
        ``verb`` and ``matter_id`` keep one carrier verb or one matter.
        """
        ...

    def list_gates(
        self,
        workspace: str,
        *,
        status: str | None,
        after: ApprovalGateRecord | None,
        limit: int,
    ) -> tuple[ApprovalGateRecord, ...]:
        """Return up to ``limit`` approval gates, oldest request first, after ``after``."""
        ...

    def phases(self, workspace: str, task_id: str, *, limit: int) -> tuple[PhaseRecord, ...]:
        """Return the task's newest ``limit`` phase checkpoints, newest first."""
        ...

    def depth(self, workspace: str | None, *, now_ms: int) -> tuple[QueueCount, ...]:
        """Count tasks by workspace and *effective* status (``None``: every workspace).

        An expired ``LEASED`` row counts as ``QUEUED`` and also under the pseudo status
        ``LEASE_EXPIRED``, so a scrape sees both the backlog and the leases that lapsed.
        """
        ...

    def gate_counts(self, workspace: str | None) -> tuple[QueueCount, ...]:
        """Count approval gates by workspace and status (``None``: every workspace)."""
        ...
