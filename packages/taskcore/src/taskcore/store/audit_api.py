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
    """

    at_ms: int
    actor: str
    workspace: str
    operation: str
    input_digest: str
    outcome: str
    subject: str | None = None
    calls: int = 1
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
    """Append-only audit events."""

    def append(self, event: AuditEvent) -> int:
        """Append ``event``; return its sequence number."""
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

        Return how many were deleted (retention; the platform-wide sweep).
        """
        ...
