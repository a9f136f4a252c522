"""The operator's acts against a data directory, for the ``agent-task operator`` commands.

:class:`AuthorityAdmin` is to the authority what :class:`taskcore.auth.TokenAdmin` is to
tokens: adapters call it instead of opening the journal themselves. Each method is one act
of :mod:`taskcore.authority.admin` (or :mod:`taskcore.collector.admin` for collector
profiles) plus the decisions the commands need: the newest enrollment epoch, the runtime
identity a new command profile pins, the public key's form, the repository overview.
:func:`collector_test_requirement` is the one-step TEST requirement ``install-requirement
--test-step`` installs.

>>> import pathlib, subprocess, tempfile
>>> tree = pathlib.Path(tempfile.mkdtemp())
>>> _ = subprocess.run(["git", "init", "-q", str(tree)], check=True)
>>> with AuthorityAdmin(tempfile.mkdtemp(), create=True) as admin:
...     repo = admin.register_repository(workspace="w1", repository_id="acme", work_tree=tree)
...     req = admin.install_requirement(
...         repository_id="acme", requirement=collector_test_requirement("tests", "ok"))
...     view = admin.overview("acme")
>>> view.repository.policy_epoch, req.created, view.collector_profiles
(1, True, ())
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

import attrs

from taskcore.authority.admin import (
    InstalledRequirement,
    enroll_executor,
    install_requirement,
    register_profile,
    register_repository,
    revoke_executor,
)
from taskcore.authority.config import OperatorConfig, apply_config
from taskcore.authority.requirement import RequirementStep, WorkflowRequirement
from taskcore.clock import Clock, SystemClock
from taskcore.collector.admin import install_collector_profile
from taskcore.collector.authority_key import ensure_authority_key
from taskcore.collector.records import runtime_identity_digest
from taskcore.collector.runtime import probe_runtime
from taskcore.collector.state import key_id_for
from taskcore.contract import (
    ActionClass,
    CollectorProfile,
    CommandCollectorProfile,
    CommandRecipe,
    CriterionMode,
    ExecutorEnrollment,
    ExecutorRevocation,
    GraphStatus,
    IsolationPolicy,
    TaskCriterion,
    WorkflowProgression,
)
from taskcore.digest import is_hex64
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.authority_api import ProfileRecord, RepositoryRecord
from taskcore.store.collector_api import CollectorProfileRecord
from taskcore.store.storage import Storage

__all__ = [
    "AuthorityAdmin",
    "AuthorityIdentity",
    "EpochView",
    "RepositoryOverview",
    "RuntimeHere",
    "collector_test_requirement",
    "runtime_here",
]


def collector_test_requirement(step_id: str, summary: str) -> WorkflowRequirement:
    """Return a requirement of one required TEST step that only a collector can satisfy.

    >>> requirement = collector_test_requirement("tests", "The tests pass.")
    >>> requirement.requirement_id, [s.progression.value for s in requirement.steps]
    ('tests-pass', ['collector'])
    """
    return WorkflowRequirement(
        version=1,
        requirement_id=f"{step_id}-pass",
        summary=summary,
        steps=(
            RequirementStep(
                step_id=step_id,
                summary=summary,
                action_class=ActionClass.TEST,
                graph_status=GraphStatus.REQUIRED,
                progression=WorkflowProgression.COLLECTOR,
                depends_on=(),
                criteria=(
                    TaskCriterion(
                        criterion="tests_pass",
                        description="The pinned test command exits 0 on the exact revision.",
                        mode=CriterionMode.CONTROLLER_ONLY,
                        required=True,
                    ),
                ),
                references=(),
            ),
        ),
    )


@attrs.frozen(kw_only=True)
class EpochView:
    """One enrollment epoch of a registration and whether it is revoked."""

    epoch: int
    step_id: str
    verification_key_id: str
    revoked: bool


@attrs.frozen(kw_only=True)
class AuthorityIdentity:
    """The authority's descriptor-signing public key, its key ID and its audience."""

    public_key: str
    key_id: str
    audience: str


@attrs.frozen(kw_only=True)
class RuntimeHere:
    """What a command profile's ``argv[0]`` resolves to on this machine, and if it is pinned.

    ``executable`` is the resolved path (what runs and what is hashed); ``matches`` whether
    this machine's runtime identity is the one the profile pins (same-host collection needs
    it; a profile pinned for another machine does not match here, which is expected there).
    """

    argv0: str
    executable: str
    sandbox: str
    runtime_identity_sha256: str
    matches: bool


def runtime_here(
    recipe: CommandRecipe,
    pinned: str | None = None,
    *,
    isolation: IsolationPolicy | None = None,
) -> RuntimeHere:
    """Probe ``recipe`` on this machine (as a collection would) and compare with ``pinned``.

    ``isolation`` is the profile's isolation policy: the sandbox it plans is part of the
    runtime identity, so a profile with one must be probed with it.
    """
    identity = probe_runtime(recipe, isolation=isolation)
    digest = runtime_identity_digest(identity)
    return RuntimeHere(
        argv0=recipe.argv[0],
        executable=identity.executable,
        sandbox=identity.sandbox.value,
        runtime_identity_sha256=digest,
        matches=pinned is None or pinned == digest,
    )


@attrs.frozen(kw_only=True)
class RepositoryOverview:
    """A repository's registration, its collector profiles and the asked registrations' epochs."""

    repository: RepositoryRecord
    collector_profiles: tuple[CollectorProfileRecord, ...]
    registrations: tuple[tuple[str, tuple[EpochView, ...]], ...]


class AuthorityAdmin:
    """Operator acts on the authority in a data directory (run on the service host).

    The journal is opened on first use, so nothing is created before an act's own checks
    pass. ``create=True`` creates the data directory and journal if missing; otherwise a
    missing journal is ``NOT_FOUND`` and nothing is created.
    """

    def __init__(
        self, data_dir: Path | str, *, create: bool = False, clock: Clock | None = None
    ) -> None:
        self.data_dir = Path(data_dir)
        self.create = create
        self.clock: Clock = clock or SystemClock()
        self._storage: Storage | None = None

    @property
    def storage(self) -> Storage:
        """The journal, opened on first use (with ``create``, the authority key too)."""
        if self._storage is None:
            self._storage = open_storage(self.data_dir, create=self.create)
            if self.create:
                ensure_authority_key(self.data_dir)
        return self._storage

    def authority_identity(self) -> AuthorityIdentity:
        """What a remote collector pins: the authority's public key, key ID and audience."""
        with self.storage.read() as tx:
            audience = tx.collector.audience()
        key = ensure_authority_key(self.data_dir)
        return AuthorityIdentity(public_key=key.public_key, key_id=key.key_id, audience=audience)

    def __enter__(self) -> AuthorityAdmin:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the journal (if it was opened)."""
        if self._storage is not None:
            self._storage.close()
            self._storage = None

    # -- repositories, requirements, profiles ---------------------------------------------------

    def register_repository(
        self, *, workspace: str, repository_id: str, work_tree: Path | str
    ) -> RepositoryRecord:
        """Register a git work tree (see :func:`~taskcore.authority.admin.register_repository`)."""
        return register_repository(
            self.storage,
            self.clock,
            workspace=workspace,
            repository_id=repository_id,
            work_tree=work_tree,
        )

    def install_requirement(
        self, *, repository_id: str, requirement: WorkflowRequirement
    ) -> InstalledRequirement:
        """Install a requirement (see :func:`~taskcore.authority.admin.install_requirement`)."""
        return install_requirement(
            self.storage, self.clock, repository_id=repository_id, requirement=requirement
        )

    def register_profile(
        self, *, repository_id: str, profile_id: str, target: str, requirement_digest: str
    ) -> ProfileRecord:
        """Register a task-only profile (see :func:`~taskcore.authority.admin.register_profile`)."""
        return register_profile(
            self.storage,
            self.clock,
            repository_id=repository_id,
            profile_id=profile_id,
            target=target,
            requirement_digest=requirement_digest,
        )

    def apply_config(self, config: OperatorConfig) -> tuple[ProfileRecord, ...]:
        """Apply ``config`` to this data dir (see :func:`~taskcore.authority.config.apply_config`)."""
        return apply_config(self.storage, self.clock, config, data_dir=self.data_dir)

    # -- enrollment, collector profiles, revocation ---------------------------------------------

    def enroll(
        self,
        *,
        registration_id: str,
        executor_id: str,
        repository_id: str,
        step_id: str,
        public_key: str,
    ) -> ExecutorEnrollment:
        """Enroll an Ed25519 public key (64 hex) for one repository and step: a new epoch.

        The verification key ID is derived from the key
        (:func:`~taskcore.collector.state.key_id_for`). Enrollment grants no receipt by itself;
        a collector profile must be installed for the epoch.
        """
        # Checked before the journal is opened, so a bad key creates nothing.
        if not is_hex64(public_key):
            raise TaskError(ErrorCode.INVALID_VALUE, "the public key is 64 lowercase hex")
        return enroll_executor(
            self.storage,
            self.clock,
            registration_id=registration_id,
            executor_id=executor_id,
            repository_id=repository_id,
            step_id=step_id,
            verification_key_id=key_id_for(public_key),
            public_key=public_key,
        )

    def current_epoch(self, registration_id: str) -> int:
        """The newest enrollment epoch of ``registration_id`` (``NOT_FOUND`` if never enrolled)."""
        with self.storage.read() as tx:
            epochs = tx.authority.enrollments(registration_id)
        if not epochs:
            raise TaskError(
                ErrorCode.NOT_FOUND, f"no registration {registration_id!r}; enroll first"
            )
        return epochs[-1].registration_epoch

    def command_collector_profile(
        self,
        *,
        profile_id: str,
        repository_id: str,
        workflow_profile_id: str,
        step_id: str,
        registration_id: str,
        recipe: CommandRecipe,
        registration_epoch: int | None = None,
        runtime_identity: str | None = None,
        isolation: IsolationPolicy | None = None,
    ) -> CommandCollectorProfile:
        """Build a command collector profile pinning ``recipe`` and a runtime identity.

        Without ``runtime_identity`` the identity of this machine's runtime for the recipe
        under ``isolation`` is probed now (``ISOLATION_UNAVAILABLE`` if this machine cannot
        isolate as it requires); without ``registration_epoch`` (or with 0) the newest epoch
        is pinned.
        """
        pinned = runtime_identity or runtime_identity_digest(
            probe_runtime(recipe, isolation=isolation)
        )
        return CommandCollectorProfile(
            version=1,
            kind="command",
            profile_id=profile_id,
            repository_id=repository_id,
            workflow_profile_id=workflow_profile_id,
            step_id=step_id,
            registration_id=registration_id,
            registration_epoch=registration_epoch or self.current_epoch(registration_id),
            recipe=recipe,
            runtime_identity_sha256=pinned,
            isolation=isolation,
        )

    def install_collector_profile(self, profile: CollectorProfile) -> CollectorProfileRecord:
        """Install an immutable collector profile; a newer one for the same scope supersedes.

        See :func:`taskcore.collector.admin.install_collector_profile`.
        """
        return install_collector_profile(self.storage, self.clock, profile=profile)

    def revoke(
        self, *, registration_id: str, reason: str, registration_epoch: int | None = None
    ) -> ExecutorRevocation:
        """Revoke an epoch (default: the newest); its evidence stops counting.

        See :func:`taskcore.authority.admin.revoke_executor`.
        """
        return revoke_executor(
            self.storage,
            self.clock,
            registration_id=registration_id,
            reason=reason,
            registration_epoch=registration_epoch,
        )

    # -- reading --------------------------------------------------------------------------------

    def overview(
        self, repository_id: str, registrations: tuple[str, ...] = ()
    ) -> RepositoryOverview:
        """A repository's registration, collector profiles and the named registrations' epochs.

        An unknown repository is ``NOT_FOUND``. Everything is read in one transaction.
        """
        with self.storage.read() as tx:
            repository = tx.authority.get_repository(repository_id)
            if repository is None:
                raise TaskError(ErrorCode.NOT_FOUND, f"no repository {repository_id!r}")
            profiles = tx.collector.profiles(repository_id)
            epochs = tuple(
                (
                    registration,
                    tuple(
                        EpochView(
                            epoch=e.registration_epoch,
                            step_id=e.step_id,
                            verification_key_id=e.verification_key_id,
                            revoked=any(
                                r.registration_epoch == e.registration_epoch
                                for r in tx.authority.revocations(registration)
                            ),
                        )
                        for e in tx.authority.enrollments(registration)
                    ),
                )
                for registration in registrations
            )
        return RepositoryOverview(
            repository=repository, collector_profiles=tuple(profiles), registrations=epochs
        )
