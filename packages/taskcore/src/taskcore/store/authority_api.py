"""The authority's storage interface: records and a Protocol only, no SQL.

Repositories, policies, profiles, requirements, subjects (Changes at recorded versions),
executor enrollments and revocations.

The authority shares the journal file (``DATA_DIR/journal.sqlite``) with the workflow journal,
so a journal transition and the authority rechecks it depends on run in one transaction: the
seed's "native authority writer reservation" is the same ``BEGIN IMMEDIATE``. A PostgreSQL
backend implements :class:`AuthorityStore` over its own tables in the same database.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from taskcore.contract import ExecutorEnrollment, ExecutorRevocation

__all__ = [
    "AuthorityStore",
    "PolicyRecord",
    "ProfileRecord",
    "RepositoryRecord",
    "RequirementRecord",
    "SubjectRecord",
]


@attrs.frozen(kw_only=True)
class RepositoryRecord:
    """A registered repository: a git work tree bound to exactly one workspace.

    ``work_tree`` is the absolute path the operator registered; request data never names it.
    ``policy_epoch``/``policy_digest`` are the current policy.
    """

    repository_id: str
    workspace: str
    work_tree: str
    registered_at_ms: int
    policy_epoch: int
    policy_digest: str


@attrs.frozen(kw_only=True)
class PolicyRecord:
    """One immutable policy epoch of a repository (canonical policy bytes and their digest)."""

    repository_id: str
    epoch: int
    digest: str
    body: bytes
    recorded_at_ms: int


@attrs.frozen(kw_only=True)
class ProfileRecord:
    """An execution (task) profile: the protected target and the installed requirement it pins.

    ``generation`` counts registrations of the same profile; re-registering with another target
    or requirement makes earlier subjects of the profile stale.
    """

    repository_id: str
    profile_id: str
    target: str
    requirement_digest: str
    generation: int
    registered_at_ms: int


@attrs.frozen(kw_only=True)
class RequirementRecord:
    """An installed requirement: its canonical bytes, digest and compiled plan digest."""

    repository_id: str
    requirement_digest: str
    requirement_id: str
    body: bytes
    plan_digest: str
    installed_at_ms: int


@attrs.frozen(kw_only=True)
class SubjectRecord:
    """A compiled subject: one version of a named Change, compiled for one profile.

    ``change_version`` counts the distinct subjects recorded for the Change under the profile
    (1, 2, ...): a checkpoint whose bound inputs equal the latest subject's records nothing
    new, anything else is the next version, so the same version never names two subjects.

    Binds repository, profile, target, revision (and the commit it was derived from), Change
    and version, context bytes and digest, policy epoch and digest, installed requirement and
    plan. ``references`` is the canonical JSON of the compiled named references per step (with
    the SHA-256 read at the revision). ``binding_digest`` identifies the bound inputs; the
    same inputs recorded twice are one subject. ``superseded_at_ms`` is set when a newer
    subject of the same repository, profile and Change is recorded; superseded subjects stay.
    """

    subject_seq: int
    repository_id: str
    profile_id: str
    change_id: str
    change_version: int
    revision: str
    commit: str
    context: bytes
    context_digest: str
    target: str
    policy_epoch: int
    policy_digest: str
    requirement_digest: str
    plan_digest: str
    references: bytes
    binding_digest: str
    recorded_at_ms: int
    superseded_at_ms: int | None = None


class AuthorityStore(Protocol):
    """Authority records inside one transaction."""

    # -- repositories and policy ---------------------------------------------------------
    def insert_repository(self, record: RepositoryRecord) -> None:
        """Register a repository (``ALREADY_EXISTS`` if the ID is taken)."""
        ...

    def get_repository(self, repository_id: str) -> RepositoryRecord | None:
        """Return the repository or ``None``."""
        ...

    def repositories(
        self, workspace: str, *, after_id: str | None, limit: int
    ) -> tuple[RepositoryRecord, ...]:
        """Return up to ``limit`` repositories of ``workspace`` in ID order, after ``after_id``."""
        ...

    def insert_policy(self, record: PolicyRecord) -> None:
        """Record a policy epoch and make it the repository's current one."""
        ...

    def get_policy(self, repository_id: str, epoch: int) -> PolicyRecord | None:
        """Return one policy epoch or ``None``."""
        ...

    # -- profiles and requirements -------------------------------------------------------
    def put_profile(self, record: ProfileRecord) -> None:
        """Insert or replace a profile registration."""
        ...

    def get_profile(self, repository_id: str, profile_id: str) -> ProfileRecord | None:
        """Return the profile or ``None``."""
        ...

    def insert_requirement(self, record: RequirementRecord) -> bool:
        """Install a requirement; return ``False`` if the same digest was already installed."""
        ...

    def get_requirement(self, repository_id: str, digest: str) -> RequirementRecord | None:
        """Return an installed requirement or ``None``."""
        ...

    # -- changes and subjects ------------------------------------------------------------
    def insert_subject(self, record: SubjectRecord) -> int:
        """Record a subject (``subject_seq`` is assigned); return its sequence number."""
        ...

    def get_subject(self, subject_seq: int) -> SubjectRecord | None:
        """Return a subject (superseded or not) or ``None``."""
        ...

    def latest_subject(
        self, repository_id: str, profile_id: str, change_id: str
    ) -> SubjectRecord | None:
        """Return the newest subject of a Change under a profile, or ``None``."""
        ...

    def latest_subject_seq(self, repository_id: str, profile_id: str, change_id: str) -> int | None:
        """Return the sequence number of the newest subject of a Change, or ``None``."""
        ...

    def current_subjects(
        self, repository_id: str, *, before_seq: int | None, limit: int
    ) -> tuple[SubjectRecord, ...]:
        """Return up to ``limit`` current (not superseded) subjects of a repository.

        One per Change and profile, newest first, below ``before_seq`` when given.
        """
        ...

    def subjects_of_change(
        self,
        repository_id: str,
        profile_id: str,
        change_id: str,
        *,
        before_seq: int | None,
        limit: int,
    ) -> tuple[SubjectRecord, ...]:
        """Return up to ``limit`` subjects (every version) of one Change, newest first."""
        ...

    def subjects_with_revision(
        self, repository_id: str, profile_id: str, revision: str, limit: int
    ) -> tuple[SubjectRecord, ...]:
        """Subjects of a profile recorded for ``revision`` (any Change), newest first.

        The landing recheck asks which subjects a pushed revision could be; at most ``limit``.
        """
        ...

    def supersede_subject(self, subject_seq: int, at_ms: int) -> None:
        """Mark a subject superseded (it stays readable)."""
        ...

    # -- executor enrollment -------------------------------------------------------------
    def insert_enrollment(self, enrollment: ExecutorEnrollment) -> None:
        """Record an immutable enrollment epoch (``ALREADY_EXISTS`` on a duplicate epoch)."""
        ...

    def enrollments(self, registration_id: str) -> tuple[ExecutorEnrollment, ...]:
        """Return every epoch of a registration, oldest first."""
        ...

    def insert_revocation(self, revocation: ExecutorRevocation) -> None:
        """Record a revocation of one epoch (``ALREADY_EXISTS`` if already revoked)."""
        ...

    def revocations(self, registration_id: str) -> tuple[ExecutorRevocation, ...]:
        """Return every revocation of a registration, oldest first."""
        ...
