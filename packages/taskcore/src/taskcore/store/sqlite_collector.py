"""SQLite implementation of :class:`~taskcore.store.collector_api.CollectorStore`."""

from __future__ import annotations

import apsw
import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.collector_api import CollectorProfileRecord, ReceiptRecord, TransferRecord
from taskcore.store.sqlite import Component, Migration
from taskcore.store.tables import Table

__all__ = ["COMPONENT", "PROFILES", "RECEIPTS", "TRANSFERS", "SqliteCollectorStore"]

COMPONENT = Component(
    "collector",
    (
        Migration(
            1,
            """
            CREATE TABLE collector_meta (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            ) STRICT;
            INSERT INTO collector_meta(key, value)
                VALUES ('audience', 'authority-' || lower(hex(randomblob(16))));
            CREATE TABLE collector_profile (
                profile_id TEXT PRIMARY KEY,
                digest TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL CHECK (kind IN ('command', 'finite_review')),
                repository_id TEXT NOT NULL,
                workflow_profile_id TEXT NOT NULL,
                step_id TEXT NOT NULL,
                registration_id TEXT NOT NULL,
                registration_epoch INTEGER NOT NULL CHECK (registration_epoch >= 1),
                body BLOB NOT NULL,
                installed_at_ms INTEGER NOT NULL,
                superseded_at_ms INTEGER
            ) STRICT;
            CREATE UNIQUE INDEX collector_profile_current
                ON collector_profile(repository_id, workflow_profile_id, step_id)
                WHERE superseded_at_ms IS NULL;
            CREATE TABLE collector_transfer (
                transfer_digest TEXT PRIMARY KEY,
                upload_request_id TEXT NOT NULL,
                owner_id TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                grant_generation INTEGER NOT NULL,
                repository_id TEXT NOT NULL,
                workflow_profile_id TEXT NOT NULL,
                subject_seq INTEGER NOT NULL,
                task_id TEXT NOT NULL,
                task_digest TEXT NOT NULL,
                attempt_id TEXT NOT NULL UNIQUE,
                attempt_digest TEXT NOT NULL,
                execution_operation_id TEXT NOT NULL,
                fence INTEGER NOT NULL CHECK (fence >= 1),
                registration_id TEXT NOT NULL,
                registration_epoch INTEGER NOT NULL,
                verification_key_id TEXT NOT NULL,
                collector_profile_id TEXT NOT NULL REFERENCES collector_profile(profile_id),
                collector_profile_digest TEXT NOT NULL,
                kind TEXT NOT NULL,
                outcome TEXT NOT NULL,
                passing INTEGER NOT NULL CHECK (passing IN (0, 1)),
                envelope BLOB NOT NULL CHECK (length(envelope) <= 16777216),
                view BLOB NOT NULL,
                retained_at_ms INTEGER NOT NULL,
                seq INTEGER NOT NULL UNIQUE,
                UNIQUE (owner_id, agent_id, upload_request_id)
            ) STRICT;
            CREATE INDEX collector_transfer_subject ON collector_transfer(subject_seq, seq);
            CREATE TABLE collector_receipt (
                receipt_digest TEXT PRIMARY KEY,
                subject_seq INTEGER NOT NULL,
                repository_id TEXT NOT NULL,
                workflow_profile_id TEXT NOT NULL,
                change_id TEXT NOT NULL,
                revision TEXT NOT NULL,
                body BLOB NOT NULL,
                created_at_ms INTEGER NOT NULL,
                seq INTEGER NOT NULL UNIQUE
            ) STRICT;
            CREATE INDEX collector_receipt_subject ON collector_receipt(subject_seq, seq);
            """,
        ),
        # Retention: the original bytes of a transfer no receipt relies on may be dropped
        # (the row, its view and its digest stay; the drop is recorded).
        Migration(
            2,
            """
            ALTER TABLE collector_transfer ADD COLUMN envelope_pruned_at_ms INTEGER;
            CREATE INDEX collector_transfer_retained ON collector_transfer(retained_at_ms)
                WHERE envelope_pruned_at_ms IS NULL;
            """,
        ),
    ),
)

PROFILES: Table[CollectorProfileRecord] = Table(
    "collector_profile", CollectorProfileRecord, key=("profile_id",)
)
TRANSFERS: Table[TransferRecord] = Table(
    "collector_transfer",
    TransferRecord,
    key=("transfer_digest",),
    # Read, never written through the record: the stored envelope's length, and when the
    # retention sweep dropped it (the bytes themselves are read only through envelope()).
    generated=("length", "pruned_at_ms"),
    renamed={"length": "length(envelope)", "pruned_at_ms": "envelope_pruned_at_ms"},
)
RECEIPTS: Table[ReceiptRecord] = Table("collector_receipt", ReceiptRecord, key=("receipt_digest",))


class SqliteCollectorStore:
    """Collector rows in the ``collector_*`` tables."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def audience(self) -> str:
        """Return the audience identity of this authority."""
        row = self._conn.execute(
            "SELECT value FROM collector_meta WHERE key = 'audience'"
        ).fetchone()
        if row is None:
            raise TaskError(ErrorCode.INTEGRITY_FAILURE, "the collector tables have no audience")
        return str(row[0])

    def _next_seq(self, table: str) -> int:
        row = self._conn.execute(
            f"SELECT coalesce(max(seq), 0) + 1 FROM {table}"  # noqa: S608 - constant names
        ).fetchone()
        return int(row[0]) if row is not None else 1

    # -- profiles ------------------------------------------------------------------------
    def insert_profile(self, record: CollectorProfileRecord) -> None:
        """Install a profile, superseding the current one of its scope."""
        if self.get_profile(record.profile_id) is not None:
            raise TaskError(
                ErrorCode.ALREADY_EXISTS,
                f"collector profile {record.profile_id!r} is installed; profiles are immutable, "
                "install a new one under a new profile ID",
            )
        self._conn.execute(
            "UPDATE collector_profile SET superseded_at_ms = ? WHERE repository_id = ? "
            "AND workflow_profile_id = ? AND step_id = ? AND superseded_at_ms IS NULL",
            (
                record.installed_at_ms,
                record.repository_id,
                record.workflow_profile_id,
                record.step_id,
            ),
        )
        try:
            self._conn.execute(*PROFILES.insert(attrs.evolve(record, superseded_at_ms=None)))
        except apsw.ConstraintError:
            raise TaskError(
                ErrorCode.ALREADY_EXISTS,
                "an identical collector profile is already installed under another ID",
            ) from None

    def get_profile(self, profile_id: str) -> CollectorProfileRecord | None:
        """Return an installed profile or ``None``."""
        row = self._conn.execute(
            f"{PROFILES.select()} WHERE profile_id = ?",
            (profile_id,),
        ).fetchone()
        return None if row is None else PROFILES.from_row(row)

    def current_profile(
        self, repository_id: str, workflow_profile_id: str, step_id: str
    ) -> CollectorProfileRecord | None:
        """Return the current profile of a scope, or ``None``."""
        row = self._conn.execute(
            f"{PROFILES.select()} "
            "WHERE repository_id = ? AND workflow_profile_id = ? AND step_id = ? "
            "AND superseded_at_ms IS NULL",
            (repository_id, workflow_profile_id, step_id),
        ).fetchone()
        return None if row is None else PROFILES.from_row(row)

    def profiles(self, repository_id: str) -> tuple[CollectorProfileRecord, ...]:
        """Every profile of a repository, oldest first."""
        rows = self._conn.execute(
            f"{PROFILES.select()} WHERE repository_id = ? ORDER BY installed_at_ms, profile_id",
            (repository_id,),
        )
        return tuple(PROFILES.from_row(r) for r in rows)

    # -- transfers -----------------------------------------------------------------------
    def insert_transfer(self, record: TransferRecord, envelope: bytes) -> None:
        """Retain a validated transfer and its original bytes."""
        if len(envelope) != record.length:
            raise TaskError(ErrorCode.INTERNAL, "the transfer record's length is not its bytes'")
        seq = self._next_seq("collector_transfer")
        self._conn.execute(*TRANSFERS.insert(record, extra={"envelope": envelope, "seq": int(seq)}))

    def transfer_of_attempt(self, attempt_id: str) -> TransferRecord | None:
        """Return the transfer retained for an attempt, or ``None``."""
        row = self._conn.execute(
            f"{TRANSFERS.select()} WHERE attempt_id = ?",
            (attempt_id,),
        ).fetchone()
        return None if row is None else TRANSFERS.from_row(row)

    def transfer_by_upload(
        self, owner_id: str, agent_id: str, upload_request_id: str
    ) -> TransferRecord | None:
        """Return the transfer uploaded under that owner, agent and request ID, or ``None``."""
        row = self._conn.execute(
            f"{TRANSFERS.select()} WHERE owner_id = ? AND agent_id = ? AND upload_request_id = ?",
            (owner_id, agent_id, upload_request_id),
        ).fetchone()
        return None if row is None else TRANSFERS.from_row(row)

    def transfers_of_subject(self, subject_seq: int) -> tuple[TransferRecord, ...]:
        """Every transfer of a subject, in retention order."""
        rows = self._conn.execute(
            f"{TRANSFERS.select()} WHERE subject_seq = ? ORDER BY seq",
            (subject_seq,),
        )
        return tuple(TRANSFERS.from_row(r) for r in rows)

    def envelope(self, transfer_digest: str, *, max_bytes: int) -> bytes:
        """Return a retained transfer's original bytes, checking the stored length first."""
        row = self._conn.execute(
            "SELECT length(envelope), envelope_pruned_at_ms FROM collector_transfer "
            "WHERE transfer_digest = ?",
            (transfer_digest,),
        ).fetchone()
        if row is None:
            raise TaskError(ErrorCode.NOT_FOUND, "no such retained transfer")
        if row[1] is not None:
            raise TaskError(
                ErrorCode.NOT_FOUND,
                "the bytes of this transfer were removed by the retention sweep (no receipt "
                "relied on them); its digest and outcome remain",
            )
        if int(row[0]) > max_bytes:
            raise TaskError(
                ErrorCode.INTEGRITY_FAILURE, "a retained transfer is larger than its bound"
            )
        data = self._conn.execute(
            "SELECT envelope FROM collector_transfer WHERE transfer_digest = ?",
            (transfer_digest,),
        ).fetchone()
        assert data is not None
        return bytes(data[0])

    # -- receipts ------------------------------------------------------------------------
    def insert_receipt(self, record: ReceiptRecord) -> bool:
        """Record a receipt; ``False`` if that digest exists."""
        exists = self._conn.execute(
            "SELECT 1 FROM collector_receipt WHERE receipt_digest = ?", (record.receipt_digest,)
        ).fetchone()
        if exists is not None:
            return False
        seq = self._next_seq("collector_receipt")
        self._conn.execute(*RECEIPTS.insert(record, extra={"seq": int(seq)}))
        return True

    def receipt_of_subject(self, subject_seq: int) -> ReceiptRecord | None:
        """Return the newest receipt of a subject, or ``None``."""
        row = self._conn.execute(
            f"{RECEIPTS.select()} WHERE subject_seq = ? ORDER BY seq DESC LIMIT 1",
            (subject_seq,),
        ).fetchone()
        return None if row is None else RECEIPTS.from_row(row)

    # -- operator reads and retention ----------------------------------------------------
    def transfer_counts(self, workspace: str | None) -> tuple[tuple[str, str, int], ...]:
        """Count retained transfers by workspace and outcome (``None``: every workspace)."""
        where, args = ("WHERE r.workspace = ?", [workspace]) if workspace is not None else ("", [])
        rows = self._conn.execute(
            "SELECT r.workspace, t.outcome, COUNT(*) FROM collector_transfer t "  # noqa: S608 - constant names
            "JOIN authority_repository r ON r.repository_id = t.repository_id "
            f"{where} GROUP BY r.workspace, t.outcome ORDER BY r.workspace, t.outcome",
            args,
        )
        return tuple((str(ws), str(outcome), int(n)) for ws, outcome, n in rows)

    def receipt_counts(self, workspace: str | None) -> tuple[tuple[str, int], ...]:
        """Count receipts by workspace (``None``: every workspace)."""
        where, args = ("WHERE r.workspace = ?", [workspace]) if workspace is not None else ("", [])
        rows = self._conn.execute(
            "SELECT r.workspace, COUNT(*) FROM collector_receipt c "  # noqa: S608 - constant names
            "JOIN authority_repository r ON r.repository_id = c.repository_id "
            f"{where} GROUP BY r.workspace ORDER BY r.workspace",
            args,
        )
        return tuple((str(ws), int(n)) for ws, n in rows)

    def prune_envelopes(self, before_ms: int, *, now_ms: int, limit: int) -> int:
        """Drop the original bytes of up to ``limit`` transfers no receipt relies on.

        Only transfers retained before ``before_ms`` whose subject is superseded and has no
        receipt; the row (digest, outcome, view) stays and records ``now_ms``.
        """
        self._conn.execute(
            "UPDATE collector_transfer SET envelope = x'', envelope_pruned_at_ms = ? "
            "WHERE transfer_digest IN (SELECT t.transfer_digest FROM collector_transfer t "
            "JOIN authority_subject s ON s.subject_seq = t.subject_seq "
            "WHERE t.envelope_pruned_at_ms IS NULL AND t.retained_at_ms < ? "
            "AND s.superseded_at_ms IS NOT NULL AND NOT EXISTS (SELECT 1 FROM collector_receipt "
            "c WHERE c.subject_seq = t.subject_seq) ORDER BY t.retained_at_ms LIMIT ?)",
            (now_ms, before_ms, limit),
        )
        return int(self._conn.changes())
