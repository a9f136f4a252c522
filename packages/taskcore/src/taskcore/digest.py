"""Domain-separated SHA-256 digests.

``digest = SHA-256(domain_ascii || 0x00 || u64_be(len(data)) || data)``, written as 64
lowercase hex characters. The observation domain is fixed by the seed; the others are ours
and are listed, with what they cover, in ``docs/contract.md``.

>>> domain_digest(OBSERVATION_DOMAIN, b"{}")[:16]
'0f76ae6a50a914a0'
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "ATTEMPT_DOMAIN",
    "AUDIT_INPUT_DOMAIN",
    "COLLECTOR_TRANSFER_DOMAIN",
    "OBSERVATION_DOMAIN",
    "PLAN_DOMAIN",
    "RECEIPT_DOMAIN",
    "REQUEST_DOMAIN_PREFIX",
    "REVISION_DOMAIN",
    "SUBJECT_DOMAIN",
    "TASK_DOMAIN",
    "domain_digest",
    "domain_digest_bytes",
    "is_hex64",
    "request_domain",
    "require_hex64",
    "sha256_hex",
]

OBSERVATION_DOMAIN: Final = "agentscm.agent-workflow-observation.v1"
"""Seed-fixed domain of the registered-observation digest."""
TASK_DOMAIN: Final = "agentscm.agent-workflow-task.v1"
"""Digest of a WorkflowTask's canonical bytes."""
ATTEMPT_DOMAIN: Final = "agentscm.agent-workflow-attempt.v1"
"""Digest of a WorkflowTaskAttempt's canonical bytes."""
SUBJECT_DOMAIN: Final = "agentscm.agent-workflow-subject.v1"
"""Digest of a WorkflowTaskSubject's canonical bytes."""
PLAN_DOMAIN: Final = "agentscm.agent-workflow-plan.v1"
"""Digest of a compiled requirement plan."""
REVISION_DOMAIN: Final = "agentscm.git-revision.v1"
"""Digest of a git commit's content (the immutable revision)."""
REQUEST_DOMAIN_PREFIX: Final = "agentscm.agent-workflow-request.v1."
"""Prefix of mutation request digests; the action name completes the domain."""
RECEIPT_DOMAIN: Final = "agentscm.agent-workflow-receipt.v2"
"""Digest of a v2 receipt."""
COLLECTOR_TRANSFER_DOMAIN: Final = "agentscm.agent-workflow-collector-transfer.v1"
"""Digest a collector signs over its transfer header."""
AUDIT_INPUT_DOMAIN: Final = "agent-task.audit-input.v1"
"""Digest of a front-door call's raw input as recorded in the audit log."""

_HEX64 = re.compile(r"[0-9a-f]{64}")


def request_domain(action: str) -> str:
    """Return the request-digest domain for a mutation ``action`` (``claim``, ``heartbeat``...).

    >>> request_domain("heartbeat")
    'agentscm.agent-workflow-request.v1.heartbeat'
    """
    return REQUEST_DOMAIN_PREFIX + action


def domain_digest_bytes(domain: str, data: bytes) -> bytes:
    """Return the raw 32-byte domain-separated digest of ``data``."""
    prefix = _prefixes.get(domain)
    if prefix is None:
        prefix = _domain_prefix(domain)
    if len(data) <= 4096:  # one call: joining a small input costs less than two updates
        return hashlib.sha256(b"".join((prefix, len(data).to_bytes(8, "big"), data))).digest()
    h = hashlib.sha256(prefix)
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)
    return h.digest()


def _domain_prefix(domain: str) -> bytes:
    """``domain`` in ASCII and its NUL terminator, checked (kept for the next digest)."""
    try:
        prefix = domain.encode("ascii")
    except UnicodeEncodeError:
        raise TaskError(ErrorCode.INVALID_VALUE, "digest domains are ASCII") from None
    if b"\x00" in prefix:
        raise TaskError(ErrorCode.INVALID_VALUE, "digest domains contain no NUL")
    if len(_prefixes) < 1024:  # the domains are constants: a handful in all
        _prefixes[domain] = prefix + b"\x00"
    return prefix + b"\x00"


_prefixes: dict[str, bytes] = {}


def domain_digest(domain: str, data: bytes) -> str:
    """Return the domain-separated digest of ``data`` as 64 lowercase hex characters."""
    return domain_digest_bytes(domain, data).hex()


def sha256_hex(data: bytes) -> str:
    """Return the plain SHA-256 of ``data`` as 64 lowercase hex characters."""
    return hashlib.sha256(data).hexdigest()


def is_hex64(value: object) -> bool:
    """Return whether ``value`` is a string of exactly 64 lowercase hex characters."""
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def require_hex64(value: object, what: str, *, path: str | None = None) -> str:
    """Return ``value`` if it is 64 lowercase hex characters, else raise ``INVALID_VALUE``."""
    if not is_hex64(value):
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"{what} must be 64 lowercase hex characters", path=path
        )
    assert isinstance(value, str)
    return value
