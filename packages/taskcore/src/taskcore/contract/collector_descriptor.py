"""The server-derived collector descriptor, and the one function that builds a pinned request.

``workflow.collector_descriptor`` answers with a :class:`CollectorDescriptor` for a claimed
collector attempt: everything the local collector needs, all derived by the authority from
the stored task, the attempt, the installed collector profile and the subject's commit. Request
JSON chooses none of it. :func:`build_execution_request` is the single derivation of the pinned
:class:`~taskcore.contract.collector_records.ExecutionRequest`: the authority uses it to produce the
descriptor and again, on import, to regenerate the request and compare bytes; the collector
uses it to check the descriptor is self-consistent before running anything.

>>> binding = PinnedBinding(audience="auth1", repository_id="acme", workflow_profile_id="p",
...     step_id="test", task_id="t1", task_digest="a" * 64, attempt_id="a1",
...     attempt_digest="b" * 64, execution_operation_id="op1", fence=1,
...     revision="c" * 64, commit="d" * 40)
>>> binding.fence
1
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from taskcore.canonical import canonical_json
from taskcore.codec import wire_field
from taskcore.contract.collector import (
    CollectorProfile,
    CommandCollectorProfile,
    FiniteReviewCollectorProfile,
)
from taskcore.contract.collector_records import COMMIT_PATTERN, ExecutionRequest
from taskcore.contract.collector_transfer import OriginGrant
from taskcore.contract.common import HEX64, ExecutorBinding, digest_field, id_field
from taskcore.digest import domain_digest, sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.signing import verify_digest

__all__ = [
    "COLLECTOR_PROFILE_DOMAIN",
    "DESCRIPTOR_DOMAIN",
    "CollectorDescriptor",
    "PinnedBinding",
    "ReviewDescriptor",
    "build_execution_request",
    "collector_profile_digest",
    "descriptor_digest",
    "request_bytes",
    "verify_descriptor",
]

DESCRIPTOR_DOMAIN: Final = "agent-task.collector-descriptor.v1"
"""Domain of the digest the authority signs over a descriptor (ours; not a seed domain)."""

COLLECTOR_PROFILE_DOMAIN = "agentscm.agent-workflow-collector-profile.v1"
"""Digest of an installed collector profile's canonical bytes."""


def collector_profile_digest(profile: CollectorProfile) -> str:
    """Return the digest that names an installed (immutable) collector profile."""
    return domain_digest(COLLECTOR_PROFILE_DOMAIN, canonical_json(profile))


@attrs.frozen(kw_only=True)
class PinnedBinding:
    """The task, attempt and subject a collection is bound to (all from the authority)."""

    audience: str = id_field()
    repository_id: str = wire_field(min_len=1, max_len=257)
    workflow_profile_id: str = id_field()
    step_id: str = id_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    execution_operation_id: str = id_field()
    fence: int = wire_field(lo=1)
    revision: str = digest_field()
    commit: str = wire_field(max_len=64, pattern=COMMIT_PATTERN)


def build_execution_request(
    binding: PinnedBinding, profile: CommandCollectorProfile
) -> ExecutionRequest:
    """Return the pinned request for ``binding`` under ``profile`` (deterministic)."""
    return ExecutionRequest(
        version=1,
        audience=binding.audience,
        repository_id=binding.repository_id,
        workflow_profile_id=binding.workflow_profile_id,
        step_id=binding.step_id,
        collector_profile_id=profile.profile_id,
        collector_profile_digest=collector_profile_digest(profile),
        task_id=binding.task_id,
        task_digest=binding.task_digest,
        attempt_id=binding.attempt_id,
        attempt_digest=binding.attempt_digest,
        execution_operation_id=binding.execution_operation_id,
        fence=binding.fence,
        revision=binding.revision,
        commit=binding.commit,
        recipe=profile.recipe,
        runtime_identity_sha256=profile.runtime_identity_sha256,
    )


def request_bytes(request: object) -> bytes:
    """Return the canonical bytes of a request record (what the header's digest covers)."""
    return canonical_json(request)


@attrs.frozen(kw_only=True)
class CollectorDescriptor:
    """What ``collector_descriptor`` returns for a claimed command-collector attempt."""

    version: int = wire_field(version=True)
    kind: Literal["command"] = wire_field()
    binding: PinnedBinding = wire_field()
    origin: OriginGrant = wire_field()
    registration: ExecutorBinding = wire_field()
    profile: CommandCollectorProfile = wire_field()
    profile_digest: str = digest_field()
    request: ExecutionRequest = wire_field()
    request_sha256: str = digest_field()
    authority_public_key: str | None = wire_field(default=None, max_len=64, pattern=HEX64)
    """The authority key that signed this descriptor (``collector.authority_key``)."""
    authority_signature: str | None = wire_field(
        default=None, max_len=128, pattern=r"[0-9a-f]{128}"
    )
    """Ed25519 over the descriptor with this field null; a remote collector verifies it."""

    def check(self) -> None:
        """Check the descriptor is self-consistent: profile digest, scope, pinned request."""
        if collector_profile_digest(self.profile) != self.profile_digest:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "the descriptor's profile digest is wrong",
                path="$.profile_digest",
            )
        b, p = self.binding, self.profile
        if (p.repository_id, p.workflow_profile_id, p.step_id) != (
            b.repository_id,
            b.workflow_profile_id,
            b.step_id,
        ):
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "the collector profile is for another repository, profile or step",
                path="$.profile",
            )
        if (p.registration_id, p.registration_epoch) != (
            self.registration.registration_id,
            self.registration.registration_epoch,
        ):
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "the collector profile authorizes another enrollment epoch",
                path="$.registration",
            )
        if build_execution_request(b, p) != self.request:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH,
                "the descriptor's request is not the pinned request",
                path="$.request",
            )
        if sha256_hex(request_bytes(self.request)) != self.request_sha256:
            raise TaskError(
                ErrorCode.BINDING_MISMATCH, "request_sha256 is wrong", path="$.request_sha256"
            )


@attrs.frozen(kw_only=True)
class ReviewDescriptor:
    """What ``collector_descriptor`` returns for a claimed finite-review attempt."""

    version: int = wire_field(version=True)
    kind: Literal["finite_review"] = wire_field()
    binding: PinnedBinding = wire_field()
    origin: OriginGrant = wire_field()
    registration: ExecutorBinding = wire_field()
    profile: FiniteReviewCollectorProfile = wire_field()
    profile_digest: str = digest_field()


def descriptor_digest(descriptor: CollectorDescriptor) -> str:
    """The digest the authority signs: the canonical descriptor with a null signature."""
    unsigned = attrs.evolve(descriptor, authority_signature=None)
    return domain_digest(DESCRIPTOR_DOMAIN, canonical_json(unsigned))


def verify_descriptor(descriptor: CollectorDescriptor, public_key: str) -> None:
    """Check ``descriptor`` was signed by the authority key ``public_key``; raise otherwise.

    ``INVALID_SIGNATURE`` when it names another key, carries no signature, or the signature
    does not verify over :func:`descriptor_digest`.
    """
    if descriptor.authority_public_key != public_key:
        raise TaskError(
            ErrorCode.INVALID_SIGNATURE,
            "the descriptor is not signed by the pinned authority key; is this the authority "
            "the collector was enrolled with?",
        )
    if descriptor.authority_signature is None:
        raise TaskError(ErrorCode.INVALID_SIGNATURE, "the descriptor carries no signature")
    verify_digest(public_key, descriptor_digest(descriptor), descriptor.authority_signature)
