"""SQLite implementation of :class:`~taskcore.store.authority_api.AuthorityStore`."""

from __future__ import annotations

from typing import Any

import apsw

from taskcore.contract import ExecutorEnrollment, ExecutorRevocation
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.authority_api import (
    PolicyRecord,
    ProfileRecord,
    RepositoryRecord,
    RequirementRecord,
    SubjectRecord,
)
from taskcore.store.rowcache import CommittedRows
from taskcore.store.sqlite import Component, Migration
from taskcore.store.tables import Table

__all__ = [
    "COMPONENT",
    "ENROLLMENTS",
    "POLICIES",
    "PROFILES",
    "REPOSITORIES",
    "REQUIREMENTS",
    "REVOCATIONS",
    "SUBJECTS",
    "SqliteAuthorityStore",
]

COMPONENT = Component(
    "authority",
    (
        Migration(
            1,
            """
            CREATE TABLE authority_repository (
                repository_id TEXT PRIMARY KEY,
                workspace TEXT NOT NULL,
                work_tree TEXT NOT NULL,
                registered_at_ms INTEGER NOT NULL,
                policy_epoch INTEGER NOT NULL CHECK (policy_epoch >= 1),
                policy_digest TEXT NOT NULL
            ) STRICT;
            CREATE TABLE authority_policy (
                repository_id TEXT NOT NULL REFERENCES authority_repository(repository_id),
                epoch INTEGER NOT NULL CHECK (epoch >= 1),
                digest TEXT NOT NULL,
                body BLOB NOT NULL,
                recorded_at_ms INTEGER NOT NULL,
                PRIMARY KEY (repository_id, epoch)
            ) STRICT;
            CREATE TABLE authority_requirement (
                repository_id TEXT NOT NULL REFERENCES authority_repository(repository_id),
                requirement_digest TEXT NOT NULL,
                requirement_id TEXT NOT NULL,
                body BLOB NOT NULL,
                plan_digest TEXT NOT NULL,
                installed_at_ms INTEGER NOT NULL,
                PRIMARY KEY (repository_id, requirement_digest)
            ) STRICT;
            CREATE TABLE authority_profile (
                repository_id TEXT NOT NULL REFERENCES authority_repository(repository_id),
                profile_id TEXT NOT NULL,
                target TEXT NOT NULL,
                requirement_digest TEXT NOT NULL,
                generation INTEGER NOT NULL CHECK (generation >= 1),
                registered_at_ms INTEGER NOT NULL,
                PRIMARY KEY (repository_id, profile_id),
                FOREIGN KEY (repository_id, requirement_digest)
                    REFERENCES authority_requirement(repository_id, requirement_digest)
            ) STRICT;
            CREATE TABLE authority_subject (
                subject_seq INTEGER PRIMARY KEY,
                repository_id TEXT NOT NULL,
                profile_id TEXT NOT NULL,
                change_id TEXT NOT NULL,
                change_version INTEGER NOT NULL,
                revision TEXT NOT NULL,
                commit_oid TEXT NOT NULL,
                context BLOB NOT NULL,
                context_digest TEXT NOT NULL,
                target TEXT NOT NULL,
                policy_epoch INTEGER NOT NULL,
                policy_digest TEXT NOT NULL,
                requirement_digest TEXT NOT NULL,
                plan_digest TEXT NOT NULL,
                refs BLOB NOT NULL,
                binding_digest TEXT NOT NULL,
                recorded_at_ms INTEGER NOT NULL,
                superseded_at_ms INTEGER,
                UNIQUE (repository_id, profile_id, change_id, change_version),
                FOREIGN KEY (repository_id, profile_id)
                    REFERENCES authority_profile(repository_id, profile_id)
            ) STRICT;
            CREATE INDEX authority_subject_change
                ON authority_subject(repository_id, profile_id, change_id, subject_seq);
            CREATE TABLE authority_enrollment (
                registration_id TEXT NOT NULL,
                registration_epoch INTEGER NOT NULL CHECK (registration_epoch >= 1),
                executor_id TEXT NOT NULL,
                repository_id TEXT NOT NULL REFERENCES authority_repository(repository_id),
                step_id TEXT NOT NULL,
                verification_key_id TEXT NOT NULL,
                public_key TEXT NOT NULL,
                enrolled_at_ms INTEGER NOT NULL,
                PRIMARY KEY (registration_id, registration_epoch)
            ) STRICT;
            CREATE TABLE authority_revocation (
                registration_id TEXT NOT NULL,
                registration_epoch INTEGER NOT NULL,
                executor_id TEXT NOT NULL,
                verification_key_id TEXT NOT NULL,
                revoked_at_ms INTEGER NOT NULL,
                reason TEXT NOT NULL,
                PRIMARY KEY (registration_id, registration_epoch),
                FOREIGN KEY (registration_id, registration_epoch)
                    REFERENCES authority_enrollment(registration_id, registration_epoch)
            ) STRICT;
            """,
        ),
        # Operator reads: a workspace's repositories, a repository's current subjects.
        Migration(
            2,
            """
            CREATE INDEX authority_repository_workspace
                ON authority_repository(workspace, repository_id);
            CREATE INDEX authority_subject_current ON authority_subject(repository_id, subject_seq)
                WHERE superseded_at_ms IS NULL;
            """,
        ),
        # The landing recheck finds the subjects of a pushed revision.
        Migration(
            3,
            """
            CREATE INDEX authority_subject_revision
                ON authority_subject(repository_id, profile_id, revision, subject_seq);
            """,
        ),
    ),
)

_FOREIGN_KEY = 787  # SQLITE_CONSTRAINT_FOREIGNKEY

_SEQ_MAX = 2**63 - 1

REPOSITORIES: Table[RepositoryRecord] = Table(
    "authority_repository", RepositoryRecord, key=("repository_id",)
)
POLICIES: Table[PolicyRecord] = Table(
    "authority_policy", PolicyRecord, key=("repository_id", "epoch")
)
PROFILES: Table[ProfileRecord] = Table(
    "authority_profile", ProfileRecord, key=("repository_id", "profile_id")
)
REQUIREMENTS: Table[RequirementRecord] = Table(
    "authority_requirement", RequirementRecord, key=("repository_id", "requirement_digest")
)
SUBJECTS: Table[SubjectRecord] = Table(
    "authority_subject",
    SubjectRecord,
    key=("subject_seq",),
    generated=("subject_seq",),
    renamed={"commit": "commit_oid", "references": "refs"},
)
ENROLLMENTS: Table[ExecutorEnrollment] = Table(
    "authority_enrollment",
    ExecutorEnrollment,
    key=("registration_id", "registration_epoch"),
    fixed={"version": 1},
)
REVOCATIONS: Table[ExecutorRevocation] = Table(
    "authority_revocation",
    ExecutorRevocation,
    key=("registration_id", "registration_epoch"),
    fixed={"version": 1},
)


_MISSING = object()


class SqliteAuthorityStore:
    """Authority records in the ``authority_*`` tables.

    Rows read are memoised for the rest of the transaction (a route resolves its repository,
    profile and subject several times per call); any write through this store forgets them.
    Every write to the ``authority_*`` tables goes through this store.
    """

    def __init__(self, conn: apsw.Connection, committed: CommittedRows | None = None) -> None:
        self._conn = conn
        self._committed = committed or CommittedRows()
        self._memo: dict[tuple[Any, ...], Any] = {}
        self._learned: dict[tuple[Any, ...], Any] = {}

    def reset(self) -> None:
        """Start a new transaction: forget the memo and what was learned."""
        self._memo.clear()
        self._learned.clear()

    def seed(self, key: tuple[Any, ...], row: Any) -> None:
        """Remember a row read for this store (``taskcore.store.callrows``) under ``key``."""
        self._memo[key] = row

    def learned(self) -> dict[tuple[Any, ...], Any]:
        """Immutable rows this transaction read, for :class:`CommittedRows` once committed."""
        out = dict(self._learned)
        self._learned.clear()
        return out

    def _immutable(self, key: tuple[Any, ...], sql: str, args: tuple[Any, ...]) -> Any:
        """A row that never changes once committed: from the shared rows, else read."""
        found = self._committed.get(key)
        if found is not None:
            return found
        found = self._memo.get(key, _MISSING)
        if found is _MISSING:
            found = self._conn.execute(sql, args).fetchone()
            self._memo[key] = found
            if found is not None:
                self._learned[key] = found
        return found

    def _remembered(self, key: tuple[Any, ...], sql: str, args: tuple[Any, ...]) -> Any:
        found = self._memo.get(key, _MISSING)
        if found is _MISSING:
            found = self._memo[key] = self._conn.execute(sql, args).fetchone()
        return found

    def _insert(self, sql: str, args: tuple[Any, ...], what: str) -> None:
        self._memo.clear()
        try:
            self._conn.execute(sql, args)
        except apsw.ConstraintError as exc:
            if getattr(exc, "extendedresult", None) == _FOREIGN_KEY:
                raise TaskError(
                    ErrorCode.NOT_FOUND, f"{what} refers to a record that does not exist"
                ) from None
            raise TaskError(ErrorCode.ALREADY_EXISTS, f"{what} already exists") from None

    # -- repositories and policy ---------------------------------------------------------
    def insert_repository(self, record: RepositoryRecord) -> None:
        """Register a repository (``ALREADY_EXISTS`` if the ID is taken)."""
        self._insert(
            *REPOSITORIES.insert(record),
            f"repository {record.repository_id!r}",
        )

    def get_repository(self, repository_id: str) -> RepositoryRecord | None:
        """Return the repository or ``None``."""
        row = self._remembered(
            ("repository", repository_id),
            f"{REPOSITORIES.select()} WHERE repository_id = ?",
            (repository_id,),
        )
        return None if row is None else REPOSITORIES.from_row(row)

    def repositories(
        self, workspace: str, *, after_id: str | None, limit: int
    ) -> tuple[RepositoryRecord, ...]:
        """Return up to ``limit`` repositories of ``workspace`` by ID, after ``after_id``."""
        rows = self._conn.execute(
            f"{REPOSITORIES.select()} "
            "WHERE workspace = ? AND repository_id > ? ORDER BY repository_id LIMIT ?",
            (workspace, after_id or "", limit),
        )
        return tuple(REPOSITORIES.from_row(r) for r in rows)

    def insert_policy(self, record: PolicyRecord) -> None:
        """Record a policy epoch and make it the repository's current one."""
        self._insert(
            *POLICIES.insert(record),
            f"policy epoch {record.epoch}",
        )
        self._memo.clear()
        self._conn.execute(
            "UPDATE authority_repository SET policy_epoch = ?, policy_digest = ? "
            "WHERE repository_id = ?",
            (record.epoch, record.digest, record.repository_id),
        )

    def get_policy(self, repository_id: str, epoch: int) -> PolicyRecord | None:
        """Return one policy epoch or ``None``."""
        row = self._immutable(
            ("policy", repository_id, epoch),
            f"{POLICIES.select()} WHERE repository_id = ? AND epoch = ?",
            (repository_id, epoch),
        )
        return None if row is None else POLICIES.from_row(row)

    # -- profiles and requirements -------------------------------------------------------
    def put_profile(self, record: ProfileRecord) -> None:
        """Insert or replace a profile registration."""
        self._memo.clear()
        sql, args = PROFILES.insert(
            record,
            suffix="ON CONFLICT(repository_id, profile_id) DO UPDATE SET target = "
            "excluded.target, requirement_digest = excluded.requirement_digest, "
            "generation = excluded.generation, registered_at_ms = excluded.registered_at_ms",
        )
        self._conn.execute(sql, args)

    def get_profile(self, repository_id: str, profile_id: str) -> ProfileRecord | None:
        """Return the profile or ``None``."""
        row = self._remembered(
            ("profile", repository_id, profile_id),
            f"{PROFILES.select()} WHERE repository_id = ? AND profile_id = ?",
            (repository_id, profile_id),
        )
        return None if row is None else PROFILES.from_row(row)

    def insert_requirement(self, record: RequirementRecord) -> bool:
        """Install a requirement; return ``False`` if the same digest was already installed."""
        self._memo.clear()
        self._conn.execute(
            *REQUIREMENTS.insert(
                record, suffix="ON CONFLICT(repository_id, requirement_digest) DO NOTHING"
            )
        )
        return bool(self._conn.changes() == 1)

    def get_requirement(self, repository_id: str, digest: str) -> RequirementRecord | None:
        """Return an installed requirement or ``None``."""
        row = self._immutable(
            ("requirement", repository_id, digest),
            f"{REQUIREMENTS.select()} WHERE repository_id = ? AND requirement_digest = ?",
            (repository_id, digest),
        )
        return None if row is None else REQUIREMENTS.from_row(row)

    # -- changes and subjects ------------------------------------------------------------
    def insert_subject(self, record: SubjectRecord) -> int:
        """Record a subject (``subject_seq`` is assigned); return its sequence number."""
        self._memo.clear()
        self._conn.execute(*SUBJECTS.insert(record))
        return int(self._conn.last_insert_rowid())

    def get_subject(self, subject_seq: int) -> SubjectRecord | None:
        """Return a subject (superseded or not) or ``None``."""
        row = self._remembered(
            ("subject", subject_seq),
            f"{SUBJECTS.select()} WHERE subject_seq = ?",
            (subject_seq,),
        )
        return None if row is None else SUBJECTS.from_row(row)

    def latest_subject(
        self, repository_id: str, profile_id: str, change_id: str
    ) -> SubjectRecord | None:
        """Return the newest subject of a Change under a profile, or ``None``."""
        row = self._remembered(
            ("latest", repository_id, profile_id, change_id),
            f"{SUBJECTS.select()} "
            "WHERE repository_id = ? AND profile_id = ? AND change_id = ? "
            "ORDER BY subject_seq DESC LIMIT 1",
            (repository_id, profile_id, change_id),
        )
        return None if row is None else SUBJECTS.from_row(row)

    def latest_subject_seq(self, repository_id: str, profile_id: str, change_id: str) -> int | None:
        """Return the sequence number of the newest subject of a Change, or ``None``."""
        found = self._memo.get(("latest_seq", repository_id, profile_id, change_id), _MISSING)
        if found is _MISSING:
            row = self._conn.execute(
                "SELECT max(subject_seq) FROM authority_subject "
                "WHERE repository_id = ? AND profile_id = ? AND change_id = ?",
                (repository_id, profile_id, change_id),
            ).fetchone()
            found = None if row is None else row[0]
            self._memo[("latest_seq", repository_id, profile_id, change_id)] = found
        return None if found is None else int(found)

    def current_subjects(
        self, repository_id: str, *, before_seq: int | None, limit: int
    ) -> tuple[SubjectRecord, ...]:
        """Return up to ``limit`` current (not superseded) subjects, newest first."""
        rows = self._conn.execute(
            f"{SUBJECTS.select()} "
            "WHERE repository_id = ? AND superseded_at_ms IS NULL AND subject_seq < ? "
            "ORDER BY subject_seq DESC LIMIT ?",
            (repository_id, _SEQ_MAX if before_seq is None else before_seq, limit),
        )
        return tuple(SUBJECTS.from_row(r) for r in rows)

    def subjects_of_change(
        self,
        repository_id: str,
        profile_id: str,
        change_id: str,
        *,
        before_seq: int | None,
        limit: int,
    ) -> tuple[SubjectRecord, ...]:
        """Return up to ``limit`` subjects of one Change under one profile, newest first."""
        rows = self._conn.execute(
            f"{SUBJECTS.select()} "
            "WHERE repository_id = ? AND profile_id = ? AND change_id = ? AND subject_seq < ? "
            "ORDER BY subject_seq DESC LIMIT ?",
            (
                repository_id,
                profile_id,
                change_id,
                _SEQ_MAX if before_seq is None else before_seq,
                limit,
            ),
        )
        return tuple(SUBJECTS.from_row(r) for r in rows)

    def subjects_with_revision(
        self, repository_id: str, profile_id: str, revision: str, limit: int
    ) -> tuple[SubjectRecord, ...]:
        """Subjects of a profile recorded for ``revision`` (any Change), newest first."""
        rows = self._conn.execute(
            f"{SUBJECTS.select()} "
            "WHERE repository_id = ? AND profile_id = ? AND revision = ? "
            "ORDER BY subject_seq DESC LIMIT ?",
            (repository_id, profile_id, revision, limit),
        ).fetchall()
        return tuple(SUBJECTS.from_row(r) for r in rows)

    def supersede_subject(self, subject_seq: int, at_ms: int) -> None:
        """Mark a subject superseded (it stays readable)."""
        self._memo.clear()
        self._conn.execute(
            "UPDATE authority_subject SET superseded_at_ms = ? "
            "WHERE subject_seq = ? AND superseded_at_ms IS NULL",
            (at_ms, subject_seq),
        )

    # -- executor enrollment -------------------------------------------------------------
    def insert_enrollment(self, enrollment: ExecutorEnrollment) -> None:
        """Record an immutable enrollment epoch (``ALREADY_EXISTS`` on a duplicate epoch)."""
        self._insert(
            *ENROLLMENTS.insert(enrollment),
            f"enrollment epoch {enrollment.registration_epoch} of {enrollment.registration_id!r}",
        )

    def enrollments(self, registration_id: str) -> tuple[ExecutorEnrollment, ...]:
        """Return every epoch of a registration, oldest first."""
        rows = self._conn.execute(
            f"{ENROLLMENTS.select()} WHERE registration_id = ? ORDER BY registration_epoch",
            (registration_id,),
        ).fetchall()
        return tuple(ENROLLMENTS.from_row(r) for r in rows)

    def insert_revocation(self, revocation: ExecutorRevocation) -> None:
        """Record a revocation of one epoch (``ALREADY_EXISTS`` if already revoked)."""
        self._insert(
            *REVOCATIONS.insert(revocation),
            f"revocation of epoch {revocation.registration_epoch} of "
            f"{revocation.registration_id!r}",
        )

    def revocations(self, registration_id: str) -> tuple[ExecutorRevocation, ...]:
        """Return every revocation of a registration, oldest first."""
        rows = self._conn.execute(
            f"{REVOCATIONS.select()} WHERE registration_id = ? ORDER BY registration_epoch",
            (registration_id,),
        ).fetchall()
        return tuple(REVOCATIONS.from_row(r) for r in rows)
