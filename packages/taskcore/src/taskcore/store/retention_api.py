"""The retention sweep's own state: who runs it now, and what the last run did.

One row per sweep name. :meth:`RetentionStore.acquire` is a lease taken in a write
transaction, so with several service replicas on one database exactly one sweeps at a time;
the lease expires by itself if its holder dies.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["RetentionRun", "RetentionStore"]


@attrs.frozen(kw_only=True)
class RetentionRun:
    """The state of one sweep: the lease and the last finished run's report (JSON text)."""

    name: str
    holder: str | None
    lease_expires_at_ms: int | None
    last_finished_at_ms: int | None
    last_report_json: str | None


class RetentionStore(Protocol):
    """The sweep lease and its last report."""

    def acquire(self, name: str, holder: str, *, now_ms: int, lease_ms: int) -> bool:
        """Take the lease of sweep ``name`` for ``holder`` unless another holds a live one."""
        ...

    def finish(self, name: str, holder: str, *, now_ms: int, report_json: str) -> None:
        """Release the lease and record the report of the run that held it."""
        ...

    def get(self, name: str) -> RetentionRun | None:
        """Return the state of sweep ``name``, or ``None`` if it never ran."""
        ...
