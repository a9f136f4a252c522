"""The audit log interface: one event per front-door call, refused calls included."""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["AuditEvent", "AuditQuery", "AuditStore"]


@attrs.frozen(kw_only=True)
class AuditEvent:
    """One front-door call: who, where, which operation, a digest of the input, the outcome.

    ``outcome`` is ``"OK"`` or the wire spelling of the :class:`~taskcore.errors.ErrorCode`.
    ``actor`` is the token identity (``"anonymous"`` when authentication failed).
    ``subject`` is the queue or workflow task the call named (its ``taskId``), when it named
    one, so a task's audit trail is one indexed read. ``calls`` is how many calls the event
    stands for: 1, except for refusals the service aggregates (anonymous and rate-limited
    ones, see :mod:`taskcore.ratelimit`), where ``at_ms`` is the time of the flush.

    ``status_before`` / ``status_after`` are how the call moved ``subject``'s status (the
    queue's ``QUEUED``/``LEASED``/..., the workflow's ``pending``/``claimed``/...; ``before``
    is ``None`` for a task the call created), written only when the call wrote that task
    (:mod:`taskcore.callnote`). ``traceparent`` is the W3C trace context of the call: its
    own span's when tracing is on (:mod:`taskcore.tracing`), else the one it was handed.
    ``seq`` is the event id the event stream and the webhooks publish.
    """

    at_ms: int
    actor: str
    workspace: str
    operation: str
    input_digest: str
    outcome: str
    subject: str | None = None
    calls: int = 1
    status_before: str | None = None
    status_after: str | None = None
    traceparent: str | None = None
    seq: int = 0


@attrs.frozen(kw_only=True)
class AuditQuery:
    """A filter over one workspace's audit events (every field but ``workspace`` optional).

    ``since_ms`` is inclusive, ``until_ms`` exclusive; ``before_seq`` pages newest first.
    """

    workspace: str
    actor: str | None = None
    operation: str | None = None
    outcome: str | None = None
    subject: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    before_seq: int | None = None


class AuditStore(Protocol):
    """Append-only audit events, read back in order by the event stream and the webhooks."""

    def append(self, event: AuditEvent) -> int:
        """Append ``event``; return its sequence number."""
        ...

    def append_last(self, event: AuditEvent) -> None:
        """Append ``event`` as its transaction's last write, its sequence number not read.

        A store may send it with the ``COMMIT`` (PostgreSQL: one round trip fewer per call).
        """
        ...

    def after(
        self, after_seq: int, *, up_to: int, limit: int, workspace: str | None = None
    ) -> tuple[AuditEvent, ...]:
        """Events with ``after_seq < seq <= up_to``, oldest first, at most ``limit``.

        ``workspace`` keeps one workspace's events (``None``: every workspace's).
        """
        ...

    def newest_seq(self) -> int:
        """The highest ``seq`` of any committed event (0 when none was ever written)."""
        ...

    def oldest_seq(self) -> int | None:
        """The lowest ``seq`` still held (``None`` when the log is empty)."""
        ...

    def settled(self, after_seq: int, limit: int) -> tuple[tuple[int, ...], int, int]:
        """Visible ``seq`` values after ``after_seq`` and the snapshot's ``(xmin, xmax)``.

        Ascending, at most ``limit``; ``(xmin, xmax)`` is the reading snapshot's transaction
        horizon. What :class:`taskcore.events.log.Horizon` needs to tell a gap that an uncommitted
        writer may still fill from one that will never be filled. A backend whose event
        ids are assigned in commit order (SQLite: one writer) answers ``(0, 0)``.
        """
        ...

    def task_trace(self, workspace: str, task_id: str) -> str | None:
        """The ``traceparent`` recorded for a task (its trace), or ``None``."""
        ...

    def put_task_trace(self, workspace: str, task_id: str, traceparent: str, at_ms: int) -> None:
        """Record a task's trace unless it has one (the first call that names it wins)."""
        ...

    def count(self, *, workspace: str | None = None, operation: str | None = None) -> int:
        """Count the calls events stand for (the sum of ``calls``), optionally filtered."""
        ...

    def recent(self, *, workspace: str, limit: int) -> tuple[AuditEvent, ...]:
        """Return the newest ``limit`` events of ``workspace``, newest first."""
        ...

    def page(self, query: AuditQuery, *, limit: int) -> tuple[AuditEvent, ...]:
        """Return up to ``limit`` events matching ``query``, newest (highest ``seq``) first."""
        ...

    def prune(self, before_ms: int, *, limit: int) -> int:
        """Delete up to ``limit`` of the oldest events (every workspace) before ``before_ms``.

        Return how many were deleted (retention; the platform-wide sweep). The newest event
        is always kept, so event ids are never reused and a stream client's ``Last-Event-ID``
        is always comparable with what is held. Task traces recorded before ``before_ms``
        go with them.
        """
        ...
