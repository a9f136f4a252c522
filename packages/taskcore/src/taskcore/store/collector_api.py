"""The collector's storage interface: records and a Protocol only, no SQL.

Installed collector profiles (immutable; a newer install for the same repository, workflow
profile and step supersedes the older one), retained signed transfers with their original
bytes, and v2 receipts. The tables live in the journal file, so an import, the journal
transition it causes and the authority rechecks it relies on commit in one transaction.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = [
    "CollectorProfileRecord",
    "CollectorStore",
    "ReceiptRecord",
    "TransferRecord",
]


@attrs.frozen(kw_only=True)
class CollectorProfileRecord:
    """An installed collector profile: its canonical bytes, digest and scope.

    ``superseded_at_ms`` is set when a newer profile is installed for the same repository,
    workflow profile and step; a superseded profile never authorizes anything again.
    """

    profile_id: str
    digest: str
    kind: str
    repository_id: str
    workflow_profile_id: str
    step_id: str
    registration_id: str
    registration_epoch: int
    body: bytes
    installed_at_ms: int
    superseded_at_ms: int | None = None


@attrs.frozen(kw_only=True)
class TransferRecord:
    """A validated, retained signed transfer: its metadata (the bytes are read separately).

    ``outcome`` is the record's outcome (``passed``, ``failed``, ``timed_out``, ...);
    ``passing`` whether it completed the task's dependency. ``view`` is the exact answer the
    first upload got, returned byte for byte to an identical retry. ``length`` is the stored
    envelope's length: the original bytes are read only through
    :meth:`CollectorStore.envelope`, which checks it first. ``pruned_at_ms`` is set when
    the retention sweep dropped the bytes (never those of a subject with a receipt).
    """

    transfer_digest: str
    upload_request_id: str
    owner_id: str
    agent_id: str
    grant_generation: int
    repository_id: str
    workflow_profile_id: str
    subject_seq: int
    task_id: str
    task_digest: str
    attempt_id: str
    attempt_digest: str
    execution_operation_id: str
    fence: int
    registration_id: str
    registration_epoch: int
    verification_key_id: str
    collector_profile_id: str
    collector_profile_digest: str
    kind: str
    outcome: str
    passing: bool
    length: int
    view: bytes
    retained_at_ms: int
    pruned_at_ms: int | None = None


@attrs.frozen(kw_only=True)
class ReceiptRecord:
    """A v2 receipt created by finalization for one subject (canonical bytes in ``body``)."""

    receipt_digest: str
    subject_seq: int
    repository_id: str
    workflow_profile_id: str
    change_id: str
    revision: str
    body: bytes
    created_at_ms: int


class CollectorStore(Protocol):
    """Collector rows inside one transaction."""

    def audience(self) -> str:
        """Return the audience identity of this authority (created with the tables, never changed)."""
        ...

    # -- profiles ------------------------------------------------------------------------
    def insert_profile(self, record: CollectorProfileRecord) -> None:
        """Install a profile, superseding the current one of its scope.

        ``ALREADY_EXISTS`` if the profile ID is taken (profiles are immutable).
        """
        ...

    def get_profile(self, profile_id: str) -> CollectorProfileRecord | None:
        """Return an installed profile (superseded or not) or ``None``."""
        ...

    def current_profile(
        self, repository_id: str, workflow_profile_id: str, step_id: str
    ) -> CollectorProfileRecord | None:
        """Return the current (newest, not superseded) profile of a scope, or ``None``."""
        ...

    def profiles(self, repository_id: str) -> tuple[CollectorProfileRecord, ...]:
        """Every profile of a repository, oldest first."""
        ...

    # -- transfers -----------------------------------------------------------------------
    def insert_transfer(self, record: TransferRecord, envelope: bytes) -> None:
        """Retain a validated transfer and its exact original bytes (one per attempt)."""
        ...

    def envelope(self, transfer_digest: str, *, max_bytes: int) -> bytes:
        """Return a retained transfer's original bytes.

        The stored length is checked against ``max_bytes`` before any byte is read
        (``INTEGRITY_FAILURE`` above it, ``NOT_FOUND`` for an unknown digest).
        """
        ...

    def transfer_of_attempt(self, attempt_id: str) -> TransferRecord | None:
        """Return the transfer retained for an attempt, or ``None``."""
        ...

    def transfer_by_upload(
        self, owner_id: str, agent_id: str, upload_request_id: str
    ) -> TransferRecord | None:
        """Return the transfer an owner's agent uploaded under that request ID, or ``None``."""
        ...

    def transfers_of_subject(self, subject_seq: int) -> tuple[TransferRecord, ...]:
        """Every transfer retained for a subject's tasks, in retention order."""
        ...

    # -- receipts ------------------------------------------------------------------------
    def insert_receipt(self, record: ReceiptRecord) -> bool:
        """Record a receipt; return ``False`` if that digest was already recorded."""
        ...

    def receipt_of_subject(self, subject_seq: int) -> ReceiptRecord | None:
        """Return the newest receipt of a subject, or ``None``."""
        ...

    # -- operator reads and retention ----------------------------------------------------
    def transfer_counts(self, workspace: str | None) -> tuple[tuple[str, str, int], ...]:
        """Count transfers as ``(workspace, outcome, n)`` (``None``: every workspace)."""
        ...

    def receipt_counts(self, workspace: str | None) -> tuple[tuple[str, int], ...]:
        """Count receipts as ``(workspace, n)`` (``None``: every workspace)."""
        ...

    def prune_envelopes(self, before_ms: int, *, now_ms: int, limit: int) -> int:
        """Drop the bytes of up to ``limit`` old transfers of superseded, receipt-less subjects.

        Return how many were dropped; :meth:`envelope` then refuses them with ``NOT_FOUND``.
        """
        ...
