"""The forge-status storage interface: records and a Protocol only, no SQL.

Two kinds of rows live here, in the journal file so they commit with what causes them:

* :class:`ForgeSettingsRecord`: where a repository's commit statuses go (GitHub or GitLab,
  the API base URL, the project, the *path* of the token file, an optional ``target_url``
  template), written by the operator's ``apply`` of an ``agent_task_profiles`` config;
* :class:`OutboxRecord`: one commit status to deliver, written in the same transaction as the
  receipt, failed record, revocation or claim it reports, then delivered by the worker in
  ``agent-task serve`` (:mod:`taskcore.evidence.forge_delivery`).

No secret is ever stored: the token is read from its file at delivery time.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = [
    "OUTBOX_STATUSES",
    "ForgeSettingsRecord",
    "ForgeStore",
    "OutboxRecord",
]

OUTBOX_STATUSES = ("queued", "delivered", "refused", "given_up", "superseded")
"""Delivery statuses of an outbox row.

``queued`` waits for (another) attempt at ``next_attempt_at_ms``; ``delivered`` got a 2xx;
``refused`` got a 4xx other than 429 (recorded, never retried); ``given_up`` ran out of
attempts; ``superseded`` was replaced by a newer status for the same commit and context
before it was delivered (only the newest state of a context matters on a forge).
"""


@attrs.frozen(kw_only=True)
class ForgeSettingsRecord:
    """Where the statuses of one repository's profile go (operator config, no secret)."""

    repository_id: str
    profile_id: str
    kind: str
    api_url: str
    project: str
    token_file: str
    token_header: str
    target_url: str | None
    updated_at_ms: int


@attrs.frozen(kw_only=True)
class OutboxRecord:
    """One commit status to deliver, with its delivery bookkeeping.

    ``state`` is the abstract state (``pending``, ``success``, ``failure``, ``error``); the
    forge's own spelling is chosen at delivery. The forge coordinates (``kind`` ...
    ``token_file``) are copied from the settings when the row is written, so a row is
    delivered where it was meant to go. ``last_error`` is a short fixed category
    (``http_503``, ``unreachable``, ``token_unreadable``), never response text.
    """

    seq: int
    repository_id: str
    profile_id: str
    subject_seq: int
    change_id: str
    commit: str
    revision: str
    context: str
    state: str
    cause: str
    description: str
    target_url: str | None
    receipt_digest: str | None
    kind: str
    api_url: str
    project: str
    token_file: str
    token_header: str
    status: str
    attempts: int
    next_attempt_at_ms: int
    last_error: str | None
    created_at_ms: int
    updated_at_ms: int


class ForgeStore(Protocol):
    """Forge settings and the status outbox inside one transaction."""

    # -- settings ------------------------------------------------------------------------
    def put_settings(self, record: ForgeSettingsRecord) -> None:
        """Insert or replace the settings of a repository's profile."""
        ...

    def delete_settings(self, repository_id: str, profile_id: str) -> bool:
        """Remove the settings of a profile; return whether there were any."""
        ...

    def get_settings(self, repository_id: str, profile_id: str) -> ForgeSettingsRecord | None:
        """Return the settings of a profile, or ``None`` (statuses are not published)."""
        ...

    # -- the outbox ----------------------------------------------------------------------
    def enqueue(self, record: OutboxRecord) -> int:
        """Write a status (``seq`` is assigned) and supersede older queued rows of its key.

        The key is (repository, profile, commit, context). Returns the new ``seq``.
        """
        ...

    def latest(
        self, repository_id: str, profile_id: str, commit: str, context: str
    ) -> OutboxRecord | None:
        """The newest status written for a key (any delivery status), or ``None``."""
        ...

    def get(self, seq: int) -> OutboxRecord | None:
        """One row by ``seq``, or ``None``."""
        ...

    def due(self, now_ms: int, limit: int) -> tuple[OutboxRecord, ...]:
        """Queued rows whose next attempt is due, oldest first, at most ``limit``."""
        ...

    def next_due_at(self) -> int | None:
        """The earliest ``next_attempt_at_ms`` of a queued row, or ``None`` if none."""
        ...

    def update_delivery(
        self,
        seq: int,
        *,
        status: str,
        attempts: int,
        next_attempt_at_ms: int,
        last_error: str | None,
        now_ms: int,
    ) -> None:
        """Record a delivery attempt's outcome (or a lease on the row while it is sent)."""
        ...

    def published_successes(
        self, repository_id: str | None, limit: int
    ) -> tuple[OutboxRecord, ...]:
        """Newest-first ``success`` rows that are still the latest status of their key.

        These are the statuses a revocation may have to withdraw (``repository_id`` ``None``:
        every repository).
        """
        ...

    def rows(self, repository_id: str | None, limit: int) -> tuple[OutboxRecord, ...]:
        """The newest rows (of one repository, or all), newest first, at most ``limit``."""
        ...
