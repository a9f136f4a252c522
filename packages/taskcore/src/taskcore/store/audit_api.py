"""The audit log interface: one event per front-door call, refused calls included."""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["AuditEvent", "AuditStore"]


@attrs.frozen(kw_only=True)
class AuditEvent:
    """One front-door call: who, where, which operation, a digest of the input, the outcome.

    ``outcome`` is ``"OK"`` or the wire spelling of the :class:`~taskcore.errors.ErrorCode`.
    ``actor`` is the token identity (``"anonymous"`` when authentication failed). ``calls``
    is how many calls the event stands for: 1, except for refusals the service aggregates
    (anonymous and rate-limited ones, see :mod:`taskcore.ratelimit`), where ``at_ms`` is the
    time of the flush.
    """

    at_ms: int
    actor: str
    workspace: str
    operation: str
    input_digest: str
    outcome: str
    calls: int = 1
    seq: int = 0


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
