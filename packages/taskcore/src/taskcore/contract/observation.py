"""Observation signing bytes, digest, signature and strict verification.

Seed "Observation signing bytes": clone the validated assertion, set ``executor_provenance``
to ``null`` (serialized, not omitted), serialize canonically in declared field order, then
``SHA-256("agentscm.agent-workflow-observation.v1" || 0x00 || u64be(len) || bytes)``. Ed25519
signs the 32 raw digest bytes.

>>> from taskcore.contract.common import AgentIdentity, ExecutorBinding, TrustClass
>>> from taskcore.contract.common import AssertionOutcome, CriterionOutcome
>>> from taskcore.contract.assertion import CriterionResult, TaskResultAssertion
>>> seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
>>> unsigned = TaskResultAssertion(version=1, task_id="t1", task_digest="a" * 64,
...     attempt_id="a1", attempt_digest="b" * 64, request_id="r1",
...     execution_operation_id="op1", agent=AgentIdentity(owner_id="o", agent_id="g"),
...     executor=ExecutorBinding(registration_id="reg", executor_id="ex",
...         registration_epoch=1, verification_key_id="k1"),
...     fence=1, trust_class=TrustClass.REGISTERED_EXECUTOR_OBSERVATION,
...     outcome=AssertionOutcome.PASSED,
...     criteria=(CriterionResult(criterion="c1", outcome=CriterionOutcome.PASSED,
...         findings=(), evidence_digests=()),), executor_provenance=None)
>>> signed = sign_observation(unsigned, seed)
>>> verify_observation(signed, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
"""

from __future__ import annotations

import attrs

from taskcore.canonical import canonical_json_replacing
from taskcore.contract.assertion import ExecutorProvenance, TaskResultAssertion
from taskcore.contract.common import TrustClass
from taskcore.digest import OBSERVATION_DOMAIN, domain_digest, is_hex64
from taskcore.errors import ErrorCode, TaskError
from taskcore.signing import sign_digest, verify_digest

__all__ = [
    "observation_digest",
    "observation_signing_bytes",
    "sign_observation",
    "verify_observation",
]


def observation_signing_bytes(assertion: TaskResultAssertion) -> bytes:
    """Return the exact bytes that are hashed: the assertion with a null provenance."""
    return canonical_json_replacing(assertion, "executor_provenance", None)


def observation_digest(assertion: TaskResultAssertion) -> str:
    """Return the 64-hex observation digest of ``assertion``."""
    return domain_digest(OBSERVATION_DOMAIN, observation_signing_bytes(assertion))


def sign_observation(assertion: TaskResultAssertion, secret_key_seed: str) -> TaskResultAssertion:
    """Return ``assertion`` with an :class:`ExecutorProvenance` signed by ``secret_key_seed``."""
    if assertion.trust_class is not TrustClass.REGISTERED_EXECUTOR_OBSERVATION:
        raise TaskError(ErrorCode.INVALID_VALUE, "only registered observations are signed")
    digest = observation_digest(assertion)
    return attrs.evolve(
        assertion,
        executor_provenance=ExecutorProvenance(
            observation_digest=digest, signature=sign_digest(secret_key_seed, digest)
        ),
    )


def verify_observation(assertion: TaskResultAssertion, public_key: str) -> None:
    """Verify a registered observation against ``public_key``; return nothing or raise.

    Fails closed with ``INVALID_SIGNATURE`` when the provenance is absent
    (``$.executor_provenance``), its digest is not the recomputed digest
    (``$.executor_provenance.observation_digest``), or the signature does not verify under
    ``public_key`` (``$.executor_provenance.signature``: a wrong, non-canonical or
    small-order key's signature alike); a malformed ``public_key`` has no path.
    """
    provenance = assertion.executor_provenance
    if assertion.trust_class is not TrustClass.REGISTERED_EXECUTOR_OBSERVATION or (
        provenance is None
    ):
        raise TaskError(
            ErrorCode.INVALID_SIGNATURE,
            "the observation carries no signature",
            path="$.executor_provenance",
        )
    digest = observation_digest(assertion)
    if provenance.observation_digest != digest:
        raise TaskError(
            ErrorCode.INVALID_SIGNATURE,
            "observation_digest is not the digest of the signing bytes",
            path="$.executor_provenance.observation_digest",
        )
    try:
        verify_digest(public_key, digest, provenance.signature)
    except TaskError as err:
        if not is_hex64(public_key):
            raise  # the key is the caller's, not the document's: no path into it
        raise err.at("$.executor_provenance.signature") from None
