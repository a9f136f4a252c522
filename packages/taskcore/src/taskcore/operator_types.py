"""The wire types of the operator surface (``operator.*``): inputs and outputs.

Inputs are strict wire types (unknown fields refused, bounds checked while decoding); the
structured ones (a requirement, a config, a collector profile) travel as JSON objects and
are decoded by their own strict decoders in the handler. Outputs carry the ``workspace`` the
act concerned, so the front door audits the operator's act there
(:func:`taskcore.service.audit_workspace`).
"""

from __future__ import annotations

from typing import Any

import attrs

from taskcore.actors import MAX_AUTONOMY
from taskcore.codec import wire_field
from taskcore.contract import ExecutorEnrollment, ExecutorRevocation
from taskcore.contract.common import REPOSITORY_ID
from taskcore.store.authority_api import ProfileRecord, RepositoryRecord
from taskcore.store.collector_api import CollectorProfileRecord
from taskcore.store.tokens_api import TokenRecord

__all__ = [
    "ApplyConfigIn",
    "AuthorityIdentity",
    "CollectorProfileInstalled",
    "CollectorProfileView",
    "ConfigApplied",
    "EnrollIn",
    "Enrolled",
    "EpochView",
    "InstallCollectorProfileIn",
    "InstallRequirementIn",
    "NoIn",
    "ProfileRegistered",
    "RegisterProfileIn",
    "RegisterRepositoryIn",
    "RegistrationView",
    "RepositoryOverview",
    "RequirementInstalled",
    "RevokeIn",
    "Revoked",
    "ShowIn",
    "TokenCreateIn",
    "TokenIssued",
    "TokenList",
    "TokenListIn",
    "TokenRevokeIn",
    "TokenRevoked",
    "TokenRow",
]

_ID = r"[A-Za-z0-9._-]{1,128}"
_REPO = REPOSITORY_ID  # one identifier or OWNER/NAME, never "." or ".."
_TEXT = r"[^\x00-\x1f\x7f]*"


# -- inputs ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RegisterRepositoryIn:
    """``operator.register_repository``: a git work tree (absolute path) of a workspace."""

    workspace: str = wire_field(pattern=_ID)
    repository_id: str = wire_field(pattern=_REPO)
    work_tree: str = wire_field(min_len=1, max_len=4096, pattern=_TEXT)


@attrs.frozen(kw_only=True)
class InstallRequirementIn:
    """``operator.install_requirement``: a WorkflowRequirement (strictly decoded)."""

    repository_id: str = wire_field(pattern=_REPO)
    requirement: dict[str, Any] = wire_field()


@attrs.frozen(kw_only=True)
class RegisterProfileIn:
    """``operator.register_profile``: a task profile pinning a target and a requirement."""

    repository_id: str = wire_field(pattern=_REPO)
    profile_id: str = wire_field(max_len=128)
    target: str = wire_field(max_len=256)
    requirement_digest: str = wire_field(max_len=64)


@attrs.frozen(kw_only=True)
class ApplyConfigIn:
    """``operator.apply_config``: a version-1 ``agent_task_profiles`` config."""

    config: dict[str, Any] = wire_field()


@attrs.frozen(kw_only=True)
class EnrollIn:
    """``operator.enroll``: an Ed25519 public key for one repository and step (a new epoch)."""

    registration_id: str = wire_field(max_len=128)
    executor_id: str = wire_field(max_len=128)
    repository_id: str = wire_field(pattern=_REPO)
    step_id: str = wire_field(max_len=128)
    public_key: str = wire_field(max_len=64)


@attrs.frozen(kw_only=True)
class NoIn:
    """An act without input."""


@attrs.frozen(kw_only=True)
class InstallCollectorProfileIn:
    """``operator.install_collector_profile``: a CollectorProfile (strictly decoded)."""

    profile: dict[str, Any] = wire_field()


@attrs.frozen(kw_only=True)
class RevokeIn:
    """``operator.revoke``: one enrollment epoch (the newest without ``registration_epoch``)."""

    registration_id: str = wire_field(max_len=128)
    reason: str = wire_field(max_len=1024, pattern=_TEXT)
    registration_epoch: int | None = wire_field(default=None, lo=1)


@attrs.frozen(kw_only=True)
class ShowIn:
    """``operator.show``: a repository and the registrations whose epochs to list."""

    repository_id: str = wire_field(pattern=_REPO)
    registrations: tuple[str, ...] = wire_field(default=(), max_len=64, item_max_len=128)


@attrs.frozen(kw_only=True)
class TokenCreateIn:
    """``operator.token_create``: a token of any workspace (the secret is answered once)."""

    workspace: str = wire_field(pattern=_ID)
    tier: str = wire_field(pattern=r"agent|member|admin")
    autonomy: int = wire_field(default=1, lo=0, hi=MAX_AUTONOMY)
    name: str = wire_field(default="", max_len=128, pattern=_TEXT)


@attrs.frozen(kw_only=True)
class TokenListIn:
    """``operator.token_list``: every token (of one workspace), oldest first."""

    workspace: str | None = wire_field(default=None, pattern=_ID)


@attrs.frozen(kw_only=True)
class TokenRevokeIn:
    """``operator.token_revoke``: revoke a token by id (any workspace)."""

    token_id: str = wire_field(max_len=128)


# -- outputs -------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RequirementInstalled:
    """An installed requirement; ``created`` is false for a re-install."""

    workspace: str
    repository_id: str
    requirement_id: str
    requirement_digest: str
    plan_digest: str
    created: bool


@attrs.frozen(kw_only=True)
class ProfileRegistered:
    """A registered task profile (``generation`` grows with each change)."""

    workspace: str
    profile: ProfileRecord


@attrs.frozen(kw_only=True)
class ConfigApplied:
    """The profiles a config registered, in its order."""

    workspace: str
    profiles: tuple[ProfileRecord, ...]


@attrs.frozen(kw_only=True)
class AuthorityIdentity:
    """What a remote collector pins: the descriptor-signing public key, key ID, audience."""

    public_key: str
    key_id: str
    audience: str


@attrs.frozen(kw_only=True)
class Enrolled:
    """A new enrollment epoch and the authority identity a remote collector pins."""

    workspace: str
    enrollment: ExecutorEnrollment
    authority: AuthorityIdentity


@attrs.frozen(kw_only=True)
class Revoked:
    """A revoked enrollment epoch."""

    workspace: str
    revocation: ExecutorRevocation


@attrs.frozen(kw_only=True)
class CollectorProfileView:
    """An installed collector profile: its record without the bytes, and its JSON text."""

    profile_id: str
    digest: str
    kind: str
    repository_id: str
    workflow_profile_id: str
    step_id: str
    registration_id: str
    registration_epoch: int
    installed_at_ms: int
    superseded_at_ms: int | None
    profile: str

    @classmethod
    def of(cls, record: CollectorProfileRecord) -> CollectorProfileView:
        """The view of a stored record (the body is canonical JSON, so UTF-8 text)."""
        return cls(
            profile_id=record.profile_id,
            digest=record.digest,
            kind=record.kind,
            repository_id=record.repository_id,
            workflow_profile_id=record.workflow_profile_id,
            step_id=record.step_id,
            registration_id=record.registration_id,
            registration_epoch=record.registration_epoch,
            installed_at_ms=record.installed_at_ms,
            superseded_at_ms=record.superseded_at_ms,
            profile=record.body.decode("utf-8"),
        )


@attrs.frozen(kw_only=True)
class CollectorProfileInstalled:
    """A newly installed collector profile."""

    workspace: str
    profile: CollectorProfileView


@attrs.frozen(kw_only=True)
class EpochView:
    """One enrollment epoch of a registration and whether it is revoked."""

    epoch: int
    step_id: str
    verification_key_id: str
    revoked: bool


@attrs.frozen(kw_only=True)
class RegistrationView:
    """The epochs of one registration, oldest first."""

    registration_id: str
    epochs: tuple[EpochView, ...]


@attrs.frozen(kw_only=True)
class RepositoryOverview:
    """A repository's registration, its collector profiles and the asked registrations."""

    workspace: str
    repository: RepositoryRecord
    collector_profiles: tuple[CollectorProfileView, ...]
    registrations: tuple[RegistrationView, ...]


@attrs.frozen(kw_only=True)
class TokenIssued:
    """A new token: the bearer secret (shown this once) and its record (no hash)."""

    workspace: str
    token: str
    token_id: str
    tier: str
    autonomy: int


@attrs.frozen(kw_only=True)
class TokenRow:
    """One token without its hash."""

    token_id: str
    name: str
    workspace: str
    tier: str
    autonomy: int
    created_at_ms: int
    revoked_at_ms: int | None

    @classmethod
    def of(cls, record: TokenRecord) -> TokenRow:
        """The row of a stored token."""
        return cls(
            token_id=record.token_id,
            name=record.name,
            workspace=record.workspace,
            tier=record.tier,
            autonomy=record.autonomy,
            created_at_ms=record.created_at_ms,
            revoked_at_ms=record.revoked_at_ms,
        )


@attrs.frozen(kw_only=True)
class TokenList:
    """Tokens, oldest first."""

    tokens: tuple[TokenRow, ...]


@attrs.frozen(kw_only=True)
class TokenRevoked:
    """A revoked token; ``was_live`` is false when it was already revoked."""

    workspace: str
    token_id: str
    was_live: bool
