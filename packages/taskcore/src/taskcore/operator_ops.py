"""The operator surface: the operator's and admin's acts as registry operations (``operator.*``).

Registering a repository (by its local path), installing a requirement, registering a
profile, applying an ``agent_task_profiles`` config, enrolling and revoking an executor's
key, installing a collector profile, reading a repository's overview and the host's token
commands are acts of the operator on the machine that holds the data dir. They are
operations like every other (strict decoding, the tier check, one transaction, exactly one
audit event, refusals included) on :attr:`Surface.OPERATOR`, reachable only through the
local doors (``Door.CLI``, ``Door.IN_PROCESS``): no network door offers them, so no request
body from the network can ever name a filesystem path. ``agent-task call --list`` lists
them; the ``agent-task operator`` and ``agent-task admin token`` commands call them through
:class:`OperatorDesk`.

The caller is :data:`OPERATOR_ACTOR` (audited as ``operator``). It belongs to no workspace,
so the front door audits each act under the workspace the act names (its result's
``workspace``); a refused act is audited with an empty workspace.

>>> import pathlib, subprocess, tempfile
>>> tree = pathlib.Path(tempfile.mkdtemp())
>>> _ = subprocess.run(["git", "init", "-q", str(tree)], check=True)
>>> with OperatorDesk(tempfile.mkdtemp(), create=True) as desk:
...     repo = desk.call("operator.register_repository",
...         {"workspace": "w1", "repository_id": "acme", "work_tree": str(tree)})
...     repo.policy_epoch, desk.service.audit_count(operation="operator.register_repository")
(1, 1)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from taskcore.actors import MAX_AUTONOMY, Actor, RiskClass, Tier
from taskcore.auth import issue_token_in
from taskcore.authority import admin as acts
from taskcore.authority.config import OperatorConfig, apply_config, decode_config
from taskcore.authority.requirement import WorkflowRequirement, decode_requirement
from taskcore.canonical import canonical_json
from taskcore.clock import Clock
from taskcore.codec import decode, dumps
from taskcore.collector.launchcheck import check_launch
from taskcore.collector.runtime import probe_runtime
from taskcore.contract import (
    CollectorProfile,
    CommandCollectorProfile,
    CommandRecipe,
    ExecutorEnrollment,
    ExecutorRevocation,
    IsolationPolicy,
    decode_collector_profile,
)
from taskcore.contract.collector import check_argv0
from taskcore.contract.collector_records import runtime_identity_digest
from taskcore.digest import is_hex64
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.authority_key import ensure_authority_key
from taskcore.evidence.profiles import install_collector_profile
from taskcore.oauth.operations import OPERATOR_OAUTH_OPERATIONS, register_operator
from taskcore.operator_types import (
    ApplyConfigIn,
    AuthorityIdentity,
    CollectorProfileInstalled,
    CollectorProfileView,
    ConfigApplied,
    Enrolled,
    EnrollIn,
    EpochView,
    InstallCollectorProfileIn,
    InstallRequirementIn,
    NoIn,
    ProfileRegistered,
    RegisterProfileIn,
    RegisterRepositoryIn,
    RegistrationView,
    RepositoryOverview,
    RequirementInstalled,
    Revoked,
    RevokeIn,
    ShowIn,
    TokenCreateIn,
    TokenIssued,
    TokenList,
    TokenListIn,
    TokenRevoked,
    TokenRevokeIn,
    TokenRow,
)
from taskcore.service import (
    CallContext,
    Door,
    Operation,
    Registry,
    Service,
    ServiceConfig,
    Surface,
)
from taskcore.signing import key_id_for
from taskcore.store import open_storage
from taskcore.store.authority_api import ProfileRecord, RepositoryRecord
from taskcore.store.storage import JOURNAL_FILENAME

__all__ = [
    "OPERATOR_ACTOR",
    "OPERATOR_OPERATIONS",
    "AuthorityAdmin",
    "AuthorityIdentity",
    "CollectorProfileView",
    "EpochView",
    "OperatorDesk",
    "RegistrationView",
    "RepositoryOverview",
    "TokenRow",
    "operator_registry",
    "register",
]

OPERATOR_ACTOR = Actor(
    token_id=acts.OPERATOR, workspace="", tier=Tier.ADMIN, autonomy=MAX_AUTONOMY, name="operator"
)
"""The local operator: trusted in-process code on the service host (it has no token)."""


# -- handlers (each runs in the call's transaction: ctx.storage joins it) ----------------------


def _workspace_of(ctx: CallContext, repository_id: str) -> str:
    with ctx.storage.read() as tx:
        record = tx.authority.get_repository(repository_id)
    if record is None:
        raise TaskError(ErrorCode.NOT_FOUND, f"no repository {repository_id!r} is registered")
    return str(record.workspace)


def _register_repository(ctx: CallContext, req: RegisterRepositoryIn) -> RepositoryRecord:
    return acts.register_repository(
        ctx.storage,
        ctx.clock,
        workspace=req.workspace,
        repository_id=req.repository_id,
        work_tree=Path(req.work_tree),
    )


def _install_requirement(ctx: CallContext, req: InstallRequirementIn) -> RequirementInstalled:
    requirement = decode_requirement(dumps(req.requirement))
    installed = acts.install_requirement(
        ctx.storage, ctx.clock, repository_id=req.repository_id, requirement=requirement
    )
    return RequirementInstalled(
        workspace=_workspace_of(ctx, req.repository_id),
        repository_id=req.repository_id,
        requirement_id=requirement.requirement_id,
        requirement_digest=installed.requirement_digest,
        plan_digest=installed.plan_digest,
        created=installed.created,
    )


def _register_profile(ctx: CallContext, req: RegisterProfileIn) -> ProfileRegistered:
    record = acts.register_profile(
        ctx.storage,
        ctx.clock,
        repository_id=req.repository_id,
        profile_id=req.profile_id,
        target=req.target,
        requirement_digest=req.requirement_digest,
    )
    return ProfileRegistered(workspace=_workspace_of(ctx, req.repository_id), profile=record)


def _apply_config(ctx: CallContext, req: ApplyConfigIn) -> ConfigApplied:
    config = decode_config(dumps(req.config))
    profiles = apply_config(ctx.storage, ctx.clock, config, data_dir=ctx.service.config.data_dir)
    return ConfigApplied(workspace=config.workspace, profiles=profiles)


def _identity(ctx: CallContext) -> AuthorityIdentity:
    with ctx.storage.read() as tx:
        audience = tx.collector.audience()
    key = ensure_authority_key(ctx.service.config.data_dir)
    return AuthorityIdentity(public_key=key.public_key, key_id=key.key_id, audience=audience)


def _enroll(ctx: CallContext, req: EnrollIn) -> Enrolled:
    if not is_hex64(req.public_key):
        raise TaskError(
            ErrorCode.INVALID_VALUE, "the public key is 64 lowercase hex", path="$.public_key"
        )
    enrollment = acts.enroll_executor(
        ctx.storage,
        ctx.clock,
        registration_id=req.registration_id,
        executor_id=req.executor_id,
        repository_id=req.repository_id,
        step_id=req.step_id,
        verification_key_id=key_id_for(req.public_key),
        public_key=req.public_key,
    )
    return Enrolled(
        workspace=_workspace_of(ctx, req.repository_id),
        enrollment=enrollment,
        authority=_identity(ctx),
    )


def _authority(ctx: CallContext, _: NoIn) -> AuthorityIdentity:
    return _identity(ctx)


def _install_collector_profile(
    ctx: CallContext, req: InstallCollectorProfileIn
) -> CollectorProfileInstalled:
    profile = decode_collector_profile(dumps(req.profile))
    record = install_collector_profile(ctx.storage, ctx.clock, profile=profile)
    return CollectorProfileInstalled(
        workspace=_workspace_of(ctx, record.repository_id),
        profile=CollectorProfileView.of(record),
    )


def _revoke(ctx: CallContext, req: RevokeIn) -> Revoked:
    revocation = acts.revoke_executor(
        ctx.storage,
        ctx.clock,
        registration_id=req.registration_id,
        reason=req.reason,
        registration_epoch=req.registration_epoch,
    )
    with ctx.storage.read() as tx:
        epochs = tx.authority.enrollments(req.registration_id)
    workspace = _workspace_of(ctx, epochs[0].repository_id) if epochs else ""
    return Revoked(workspace=workspace, revocation=revocation)


def _show(ctx: CallContext, req: ShowIn) -> RepositoryOverview:
    with ctx.storage.read() as tx:
        repository = tx.authority.get_repository(req.repository_id)
        if repository is None:
            raise TaskError(ErrorCode.NOT_FOUND, f"no repository {req.repository_id!r}")
        profiles = tx.collector.profiles(req.repository_id)
        registrations = []
        for registration in req.registrations:
            revoked = {r.registration_epoch for r in tx.authority.revocations(registration)}
            registrations.append(
                RegistrationView(
                    registration_id=registration,
                    epochs=tuple(
                        EpochView(
                            epoch=e.registration_epoch,
                            step_id=e.step_id,
                            verification_key_id=e.verification_key_id,
                            revoked=e.registration_epoch in revoked,
                        )
                        for e in tx.authority.enrollments(registration)
                    ),
                )
            )
    return RepositoryOverview(
        workspace=repository.workspace,
        repository=repository,
        collector_profiles=tuple(CollectorProfileView.of(p) for p in profiles),
        registrations=tuple(registrations),
    )


def _token_create(ctx: CallContext, req: TokenCreateIn) -> TokenIssued:
    issued = issue_token_in(
        ctx.transaction(),
        ctx.now_ms,
        workspace=req.workspace,
        tier=Tier.from_wire(req.tier),
        autonomy=req.autonomy,
        name=req.name,
    )
    return TokenIssued(
        workspace=req.workspace,
        token=issued.token,
        token_id=issued.record.token_id,
        tier=issued.record.tier,
        autonomy=issued.record.autonomy,
    )


def _token_list(ctx: CallContext, req: TokenListIn) -> TokenList:
    rows = ctx.transaction().tokens.list(workspace=req.workspace)
    return TokenList(tokens=tuple(TokenRow.of(r) for r in rows))


def _token_revoke(ctx: CallContext, req: TokenRevokeIn) -> TokenRevoked:
    from taskcore.auth import revoke_token

    tx = ctx.transaction()
    record = tx.tokens.get(req.token_id)
    if record is None:
        raise TaskError(ErrorCode.NOT_FOUND, f"no token with id {req.token_id!r}")
    was_live = revoke_token(ctx.storage, ctx.clock, req.token_id)
    return TokenRevoked(workspace=record.workspace, token_id=req.token_id, was_live=was_live)


_W, _S, _R = RiskClass.WRITE, RiskClass.SENSITIVE, RiskClass.READ

_OPERATIONS: tuple[tuple[str, str, type[Any], type[Any], Callable[..., Any], RiskClass], ...] = (
    (
        "register_repository",
        "Register a local git work tree (absolute path) as a repository of a workspace.",
        RegisterRepositoryIn,
        RepositoryRecord,
        _register_repository,
        _W,
    ),
    (
        "install_requirement",
        "Install a WorkflowRequirement for a repository (content-addressed, immutable).",
        InstallRequirementIn,
        RequirementInstalled,
        _install_requirement,
        _W,
    ),
    (
        "register_profile",
        "Register a task profile pinning a target and an installed requirement digest.",
        RegisterProfileIn,
        ProfileRegistered,
        _register_profile,
        _W,
    ),
    (
        "apply_config",
        "Apply a version-1 agent_task_profiles config to this data dir.",
        ApplyConfigIn,
        ConfigApplied,
        _apply_config,
        _W,
    ),
    (
        "enroll",
        "Enroll an Ed25519 public key for one repository and step: a new epoch.",
        EnrollIn,
        Enrolled,
        _enroll,
        _S,
    ),
    (
        "authority",
        "The authority's descriptor-signing key and audience (what a collector pins).",
        NoIn,
        AuthorityIdentity,
        _authority,
        _R,
    ),
    (
        "install_collector_profile",
        "Install an immutable collector profile; a newer one for the scope supersedes.",
        InstallCollectorProfileIn,
        CollectorProfileInstalled,
        _install_collector_profile,
        _S,
    ),
    (
        "revoke",
        "Revoke an enrollment epoch: its evidence, even retained earlier, stops counting.",
        RevokeIn,
        Revoked,
        _revoke,
        _S,
    ),
    (
        "show",
        "A repository's registration, collector profiles and enrollment epochs.",
        ShowIn,
        RepositoryOverview,
        _show,
        _R,
    ),
    (
        "token_create",
        "Create a bearer token of any workspace; the answer holds the secret, once.",
        TokenCreateIn,
        TokenIssued,
        _token_create,
        _S,
    ),
    ("token_list", "List tokens (no secrets).", TokenListIn, TokenList, _token_list, _R),
    (
        "token_revoke",
        "Revoke a token by id; its next request is refused.",
        TokenRevokeIn,
        TokenRevoked,
        _token_revoke,
        _S,
    ),
)

OPERATOR_OPERATIONS: tuple[str, ...] = (
    tuple("operator." + spec[0] for spec in _OPERATIONS) + OPERATOR_OAUTH_OPERATIONS
)
"""The operator's acts: this module's and the OAuth ones (:mod:`taskcore.oauth.operations`);
the webhook acts are :data:`taskcore.events.operations.WEBHOOK_OPERATOR_OPERATIONS`."""


def register(registry: Registry) -> None:
    """Register the ``operator.*`` operations (local doors only)."""
    for name, summary, input_type, output_type, handler, risk in _OPERATIONS:
        registry.register(
            Operation(
                name="operator." + name,
                summary=summary,
                input_type=input_type,
                output_type=output_type,
                min_tier=Tier.ADMIN,
                risk=risk,
                idempotent=name not in ("enroll", "token_create"),
                mcp=False,
                surface=Surface.OPERATOR,
                handler=handler,
                doors=frozenset({Door.CLI, Door.IN_PROCESS}),
                description="An operator act on the service host: reachable from the "
                "'agent-task operator'/'agent-task admin token' commands and in process only, "
                "never over the network.",
            )
        )


def operator_registry() -> Registry:
    """A registry of the ``operator.*`` operations alone (what the operator commands list)."""
    registry = Registry()
    register(registry)
    register_operator(registry)
    return registry


_OPERATOR_REGISTRY = operator_registry()


class OperatorDesk:
    """The operator's front door on a data directory: ``call`` an ``operator.*`` operation.

    The journal is opened on first use, so an act refused by its own checks before it needs
    the journal creates nothing; ``create=True`` creates the data directory, the journal and
    the authority key if missing (otherwise a missing journal is ``NOT_FOUND``). Every call
    goes through :meth:`taskcore.service.Service.invoke` with :data:`OPERATOR_ACTOR`, so it is
    checked, run in one transaction and audited once, refusals included.
    """

    def __init__(
        self,
        data_dir: Path | str,
        *,
        create: bool = False,
        clock: Clock | None = None,
        door: Door = Door.CLI,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.create = create
        self.clock = clock
        self.door = door
        self._service: Service | None = None

    @property
    def service(self) -> Service:
        """The in-process service on the data dir (opened on first use)."""
        if self._service is None:
            storage = open_storage(self.data_dir, create=self.create)
            if self.create:
                ensure_authority_key(self.data_dir)
            self._service = Service(
                storage, config=ServiceConfig(data_dir=self.data_dir), clock=self.clock
            )
        return self._service

    def call(self, name: str, request: Mapping[str, Any] | None = None) -> Any:
        """Run ``name`` for the operator; return the handler's result object."""
        return self.service.invoke(OPERATOR_ACTOR, name, dict(request or {}), door=self.door)

    def answer(self, name: str, raw: bytes) -> Any:
        """Run ``name`` on raw JSON for the operator; return its wire answer (a JSON value).

        What ``agent-task call operator.<act>`` and the generated ``operator``/``admin token``
        commands print. Without a journal (and without ``create``) the request is decoded
        first, so malformed input is refused as such before the missing journal is (there is
        nowhere to audit either refusal, and nothing is created).
        """
        if self._service is None and not self.create:
            op = _OPERATOR_REGISTRY.get(name)
            if op is not None and not (self.data_dir / JOURNAL_FILENAME).exists():
                decode(op.input_type, raw)
        return self.service.dispatch(OPERATOR_ACTOR, name, raw, door=self.door).json()

    def __enter__(self) -> Self:
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
        if self._service is not None:
            self._service.close()
            self._service = None


class AuthorityAdmin(OperatorDesk):
    """Typed methods over :meth:`OperatorDesk.call` for the operator's commands and tests.

    Each act is one ``operator.*`` call (checked, one transaction, audited once); what the
    commands decide locally (the newest epoch to pin, the probed runtime identity) is here.

    >>> import pathlib, subprocess, tempfile
    >>> from taskcore.authority.operator import collector_test_requirement
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

    def register_repository(
        self, *, workspace: str, repository_id: str, work_tree: Path | str
    ) -> RepositoryRecord:
        """``operator.register_repository``."""
        record: RepositoryRecord = self.call(
            "operator.register_repository",
            {"workspace": workspace, "repository_id": repository_id, "work_tree": str(work_tree)},
        )
        return record

    def install_requirement(
        self, *, repository_id: str, requirement: WorkflowRequirement
    ) -> RequirementInstalled:
        """``operator.install_requirement``."""
        installed: RequirementInstalled = self.call(
            "operator.install_requirement",
            {"repository_id": repository_id, "requirement": _tree(requirement)},
        )
        return installed

    def register_profile(
        self, *, repository_id: str, profile_id: str, target: str, requirement_digest: str
    ) -> ProfileRecord:
        """``operator.register_profile``."""
        out: ProfileRegistered = self.call(
            "operator.register_profile",
            {
                "repository_id": repository_id,
                "profile_id": profile_id,
                "target": target,
                "requirement_digest": requirement_digest,
            },
        )
        return out.profile

    def apply_config(self, config: OperatorConfig) -> tuple[ProfileRecord, ...]:
        """``operator.apply_config``."""
        out: ConfigApplied = self.call("operator.apply_config", {"config": _tree(config)})
        return out.profiles

    def authority_identity(self) -> AuthorityIdentity:
        """``operator.authority``."""
        identity: AuthorityIdentity = self.call("operator.authority")
        return identity

    def enroll(
        self,
        *,
        registration_id: str,
        executor_id: str,
        repository_id: str,
        step_id: str,
        public_key: str,
    ) -> ExecutorEnrollment:
        """``operator.enroll``: a new epoch (the key ID is derived from the key).

        A malformed key where no journal exists yet is refused before one is created (there
        is nowhere to audit it, and a typo must not create a data dir); with a journal, the
        operation refuses it and the refusal is audited.
        """
        if not is_hex64(public_key) and not (self.data_dir / JOURNAL_FILENAME).exists():
            raise TaskError(ErrorCode.INVALID_VALUE, "the public key is 64 lowercase hex")
        out: Enrolled = self.call(
            "operator.enroll",
            {
                "registration_id": registration_id,
                "executor_id": executor_id,
                "repository_id": repository_id,
                "step_id": step_id,
                "public_key": public_key,
            },
        )
        return out.enrollment

    def current_epoch(self, registration_id: str) -> int:
        """The newest enrollment epoch of ``registration_id`` (``NOT_FOUND`` if never enrolled).

        A local decision of the command building a profile (not an act, not audited).
        """
        with self.service.storage.read() as tx:
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
        isolate as it requires) and the command's ``argv[0]`` is started in that sandbox
        (:func:`~taskcore.collector.launchcheck.check_launch`: ``INVALID_VALUE`` when it could
        not start there); with one (another machine's, from ``agent-task collector
        runtime-probe`` there, which makes the same check) nothing runs here. A relative
        ``argv[0]`` is refused either way. Without ``registration_epoch`` (or with 0) the
        newest epoch is pinned.
        """
        check_argv0(recipe)
        pinned = runtime_identity
        if pinned is None:
            # This machine is the collector: pin its runtime, and start what a collection
            # will start, in the same sandbox, so a profile that cannot run is refused now.
            check_launch(recipe, isolation=isolation)
            pinned = runtime_identity_digest(probe_runtime(recipe, isolation=isolation))
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

    def install_collector_profile(self, profile: CollectorProfile) -> CollectorProfileView:
        """``operator.install_collector_profile``."""
        out: CollectorProfileInstalled = self.call(
            "operator.install_collector_profile", {"profile": _tree(profile)}
        )
        return out.profile

    def revoke(
        self, *, registration_id: str, reason: str, registration_epoch: int | None = None
    ) -> ExecutorRevocation:
        """``operator.revoke``: an epoch (default: the newest); its evidence stops counting."""
        out: Revoked = self.call(
            "operator.revoke",
            {
                "registration_id": registration_id,
                "reason": reason,
                "registration_epoch": registration_epoch,
            },
        )
        return out.revocation

    def overview(
        self, repository_id: str, registrations: tuple[str, ...] = ()
    ) -> RepositoryOverview:
        """``operator.show``."""
        view: RepositoryOverview = self.call(
            "operator.show",
            {"repository_id": repository_id, "registrations": list(registrations)},
        )
        return view


def _tree(value: Any) -> Any:
    """The JSON tree of a wire value (what its strict decoder takes back)."""
    return json.loads(canonical_json(value))
