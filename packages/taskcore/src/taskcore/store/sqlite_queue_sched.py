"""Scheduling, retries and paused verbs on SQLite (and PostgreSQL): the claim's extra SQL.

Kept apart from :mod:`taskcore.store.sqlite_queue` so the claim query reads as the seed's
query plus these fragments (docs/queue.md "Scheduled tasks", "Retries", "Pause"):

* :data:`DUE`: a ``QUEUED`` task is claimable once ``run_at_ms`` (if any) has come;
* :data:`LAPSED_RETRY`: a lapsed lease of a retrying task (``max_attempts > 1``) is claimable
  ``retry_delay_ms`` after it expired, and only below its last attempt (at the last one the
  task reads ``FAILED``: the dead-letter set);
* :func:`not_paused`: no task of a paused verb (the caller passes the paused set, usually
  empty, so the common statement is unchanged);
* :data:`EFFECTIVE_QUEUED` / :data:`EFFECTIVE_FAILED`: the effective statuses a listing
  filters on, the lapsed-lease rule of :func:`taskcore.queue.common.effective_status` in SQL.

:class:`PausedVerbs` is the ``queue_paused_verb`` table.

>>> not_paused(()), not_paused(("a", "b"))
('', 'AND verb NOT IN (?, ?) ')
"""

from __future__ import annotations

from taskcore.store.queue_api import PausedVerbRecord
from taskcore.store.sqlite_queue_rows import QueueRows
from taskcore.store.wakeup import queue_topic

__all__ = [
    "DUE",
    "EFFECTIVE_FAILED",
    "EFFECTIVE_QUEUED",
    "LAPSED_RETRY",
    "NEXT_DUE_LEASE",
    "NEXT_DUE_SCHEDULED",
    "PausedVerbs",
    "not_paused",
]

DUE = "AND (run_at_ms IS NULL OR run_at_ms <= ?) "
"""A ready task is due (one parameter: now)."""

LAPSED_RETRY = (
    "AND (max_attempts = 1 OR (attempt < max_attempts "
    "AND lease_expires_at_ms + retry_delay_ms <= ?)) "
)
"""A lapsed lease is claimable again (one parameter: now)."""

EFFECTIVE_QUEUED = (
    "(status = 'QUEUED' OR (status = 'LEASED' AND lease_expires_at_ms <= ? "
    "AND (max_attempts = 1 OR attempt < max_attempts)))"
)
"""Effective status ``QUEUED`` (one parameter: now)."""

EFFECTIVE_FAILED = (
    "(status = 'FAILED' OR (status = 'LEASED' AND lease_expires_at_ms <= ? "
    "AND max_attempts > 1 AND attempt >= max_attempts))"
)
"""Effective status ``FAILED``, the dead-letter set included (one parameter: now)."""

NEXT_DUE_LEASE = (
    "SELECT min(lease_expires_at_ms + retry_delay_ms) FROM queue_task "
    "INDEXED BY queue_task_leases WHERE workspace = ? AND status = 'LEASED' "
    "AND lease_expires_at_ms + retry_delay_ms > ?"
)
"""When the next lease lapses (plus a retrying task's back-off)."""

NEXT_DUE_SCHEDULED = (
    "SELECT min(run_at_ms) FROM queue_task INDEXED BY queue_task_scheduled "
    "WHERE workspace = ? AND status = 'QUEUED' AND run_at_ms IS NOT NULL AND run_at_ms > ?"
)
"""When the next scheduled task comes due."""


def not_paused(paused: tuple[str, ...]) -> str:
    """The fragment leaving out ``paused`` verbs (one parameter each; empty for none)."""
    if not paused:
        return ""
    return f"AND verb NOT IN ({', '.join('?' * len(paused))}) "


class PausedVerbs(QueueRows):
    """``queue_paused_verb``: the carrier verbs ``claimNext`` skips, per workspace."""

    def pause_verb(self, record: PausedVerbRecord) -> bool:
        """Pause a verb; return whether it was not paused already."""
        self._conn.execute(
            "INSERT INTO queue_paused_verb (workspace, verb, paused_by, paused_at_ms) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (workspace, verb) DO NOTHING",
            (record.workspace, record.verb, record.paused_by, record.paused_at_ms),
        )
        return bool(self._conn.changes() == 1)

    def resume_verb(self, workspace: str, verb: str) -> bool:
        """Resume a verb; its tasks may be claimable now, so waiters are signalled."""
        self._conn.execute(
            "DELETE FROM queue_paused_verb WHERE workspace = ? AND verb = ?", (workspace, verb)
        )
        if self._conn.changes() != 1:
            return False
        self._signal(queue_topic(workspace))
        return True

    def is_paused(self, workspace: str, verb: str) -> bool:
        """Whether ``verb`` is paused in ``workspace``."""
        row = self._one(
            "SELECT 1 FROM queue_paused_verb WHERE workspace = ? AND verb = ?", (workspace, verb)
        )
        return row is not None

    def paused_verbs(self, workspace: str) -> tuple[PausedVerbRecord, ...]:
        """The paused verbs of ``workspace``, sorted by name."""
        rows = self._conn.execute(
            "SELECT workspace, verb, paused_by, paused_at_ms FROM queue_paused_verb "
            "WHERE workspace = ? ORDER BY verb",
            (workspace,),
        )
        return tuple(
            PausedVerbRecord(
                workspace=str(r[0]), verb=str(r[1]), paused_by=str(r[2]), paused_at_ms=int(r[3])
            )
            for r in rows
        )
