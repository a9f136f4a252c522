"""The workflow journal's storage interface: records and a Protocol only, no SQL.

Logical tasks, attempts, retained results, idempotency rows and the transition log.

State names are plain strings here; :mod:`taskcore.workflow.states` owns their meaning and
the transition tables. Rows are bounded: every body is canonical JSON of a bounded contract
type, and outcomes are the exact bytes returned to the caller the first time.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = [
    "AssertionRecord",
    "AttemptRecord",
    "JournalStore",
    "RequestRecord",
    "TaskRecord",
    "TransitionRecord",
]


@attrs.frozen(kw_only=True)
class TaskRecord:
    """One logical task: a step of one compiled subject.

    ``body`` is the canonical bytes of the :class:`~taskcore.contract.WorkflowTask`;
    ``next_fence`` is the fence the next claim will get (fences start at 1 and only grow);
    ``completion`` says what completed the task as a dependency (``"observation"`` for a
    task-bound verified registered observation that satisfied its criteria, or a source a
    later component records, such as ``"collector"``), else ``None``.
    """

    task_id: str
    task_digest: str
    subject_seq: int
    repository_id: str
    profile_id: str
    change_id: str
    step_id: str
    plan_index: int
    body: bytes
    state: str
    next_fence: int
    current_attempt_id: str | None
    completion: str | None
    created_at_ms: int
    updated_at_ms: int


@attrs.frozen(kw_only=True)
class AttemptRecord:
    """One attempt (a fresh execution) of a task at one fence.

    ``body`` is the canonical bytes of the :class:`~taskcore.contract.WorkflowTaskAttempt`
    (its immutable binding). ``lease_expires_at_ms`` moves with heartbeats; expiry is judged
    at read time. ``superseded_by_fence`` is the strictly greater fence recorded by
    reconciliation.
    """

    attempt_id: str
    task_id: str
    fence: int
    attempt_digest: str
    body: bytes
    owner_id: str
    agent_id: str
    state: str
    lease_expires_at_ms: int
    superseded_by_fence: int | None
    created_at_ms: int
    updated_at_ms: int


@attrs.frozen(kw_only=True)
class AssertionRecord:
    """A retained result (always nonpassing material for admission).

    ``body`` is the canonical bytes of the TaskResultAssertion as accepted;
    ``completes`` says whether it completed the task as an observation dependency when it
    was retained (its executor registration is rechecked whenever that is relied on).
    """

    attempt_id: str
    task_id: str
    request_id: str
    trust_class: str
    outcome: str
    body: bytes
    observation_digest: str | None
    registration_id: str | None
    registration_epoch: int | None
    completes: bool
    retained_at_ms: int


@attrs.frozen(kw_only=True)
class RequestRecord:
    """An idempotency row: one request ID of one owner and agent, bound to one request.

    ``request_digest`` is the domain-separated digest of the exact canonical request bytes
    (kind, agent and request); ``outcome`` the exact response bytes returned the first time.
    """

    owner_id: str
    agent_id: str
    request_id: str
    kind: str
    request_digest: str
    repository_id: str
    profile_id: str
    task_id: str
    attempt_id: str | None
    outcome: bytes
    recorded_at_ms: int


@attrs.frozen(kw_only=True)
class TransitionRecord:
    """One applied transition, appended in the transaction that applied it.

    This is the journal's own audit trail; the front door adds one audit event per call.
    """

    at_ms: int
    task_id: str
    attempt_id: str | None
    event: str
    from_state: str
    to_state: str
    fence: int | None
    owner_id: str
    agent_id: str
    request_id: str | None
    seq: int = 0


class JournalStore(Protocol):
    """Journal rows inside one transaction."""

    # -- tasks ---------------------------------------------------------------------------
    def insert_task(self, record: TaskRecord) -> bool:
        """Insert a task; return ``False`` if a task with that ID already exists."""
        ...

    def get_task(self, task_id: str) -> TaskRecord | None:
        """Return the task or ``None``."""
        ...

    def tasks_of_subject(self, subject_seq: int) -> tuple[TaskRecord, ...]:
        """Return the tasks of one subject in plan order."""
        ...

    def update_task(self, record: TaskRecord, *, before: TaskRecord | None = None) -> None:
        """Write a task's new version.

        With ``before`` (the version read in this transaction) only the columns that differ
        are written (nothing when none does); without it the mutable columns (state, fence,
        attempt, completion, time). Identity columns never change.
        """
        ...

    def unresolved_prior_task(
        self,
        *,
        repository_id: str,
        change_id: str,
        profile_id: str,
        step_id: str,
        before_subject_seq: int,
        scan_limit: int,
    ) -> str | None:
        """Return the newest older task of that key whose attempt is unresolved, or ``None``.

        At most ``scan_limit`` retained task identities are examined.
        """
        ...

    def count_tasks(self) -> int:
        """Count every retained task."""
        ...

    # -- attempts ------------------------------------------------------------------------
    def insert_attempt(self, record: AttemptRecord) -> None:
        """Insert an attempt (one per task and fence; a duplicate fence is an error)."""
        ...

    def get_attempt(self, attempt_id: str) -> AttemptRecord | None:
        """Return the attempt or ``None``."""
        ...

    def attempts_of_task(self, task_id: str) -> tuple[AttemptRecord, ...]:
        """Return every attempt of a task, by fence."""
        ...

    def update_attempt(self, record: AttemptRecord, *, before: AttemptRecord | None = None) -> None:
        """Write an attempt's new version.

        With ``before`` only the columns that differ, else the mutable ones (state, lease
        expiry, supersession, time).
        """
        ...

    # -- retained results ----------------------------------------------------------------
    def insert_assertion(self, record: AssertionRecord) -> None:
        """Retain a result (one per attempt)."""
        ...

    def get_assertion(self, attempt_id: str) -> AssertionRecord | None:
        """Return the retained result of an attempt or ``None``."""
        ...

    # -- idempotency ---------------------------------------------------------------------
    def get_request(self, owner_id: str, agent_id: str, request_id: str) -> RequestRecord | None:
        """Return the request bound to this owner, agent and ID, or ``None``."""
        ...

    def insert_request(self, record: RequestRecord) -> None:
        """Bind a request ID to its request and outcome."""
        ...

    # -- transition log ------------------------------------------------------------------
    def append_transition(self, record: TransitionRecord) -> int:
        """Append a transition; return its sequence number."""
        ...

    def transitions_of_task(self, task_id: str) -> tuple[TransitionRecord, ...]:
        """Return the transitions of one task, oldest first."""
        ...

    # -- retention -----------------------------------------------------------------------
    def prune_requests(self, before_ms: int, *, limit: int) -> int:
        """Delete up to ``limit`` idempotency rows recorded before ``before_ms``; return how many.

        Rows of a task still ``claimed`` are kept whatever their age: its attempt may retry.
        """
        ...

    def prune_transitions(self, before_ms: int, *, limit: int) -> int:
        """Delete up to ``limit`` transitions before ``before_ms`` of tasks not ``claimed``."""
        ...

    # -- health --------------------------------------------------------------------------
    def integrity_errors(self) -> tuple[str, ...]:
        """Run a full integrity check of the journal file; return its complaints (none: ok)."""
        ...
