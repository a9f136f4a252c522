"""Finite review's wire types: the immutable request, its findings, calls and the record.

The controller that produces a :class:`ReviewRecord` (and the replay validation the authority
runs) is :mod:`taskcore.collector.review`; ``docs/collector.md`` describes both.

>>> ReviewOutcome("uncertain").value
'uncertain'
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import attrs

from taskcore.codec import wire_field
from taskcore.contract.collector import FiniteReviewCollectorProfile, TransportBasis
from taskcore.contract.collector_descriptor import PinnedBinding, collector_profile_digest
from taskcore.contract.collector_records import COMMIT_PATTERN
from taskcore.contract.common import digest_field, id_field
from taskcore.contract.paths import validate_reference_path
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import FINDING_MAX_CHARS, PATH_MAX_CHARS

__all__ = [
    "RESPONSE_MAX_CHARS",
    "ReviewCall",
    "ReviewFinding",
    "ReviewOutcome",
    "ReviewRecord",
    "ReviewRequest",
    "ReviewSource",
    "Severity",
    "build_review_request",
]

RESPONSE_MAX_CHARS: Final = 256 * 1024
"""The longest raw transport answer a call retains."""
SOURCE_MAX_PATHS: Final = 256
"""The most sources one review exposes."""


class ReviewOutcome(enum.Enum):
    """The outcome of a finite review."""

    PASSED = "passed"
    FAILED = "failed"
    UNCERTAIN = "uncertain"


class Severity(enum.Enum):
    """How serious one finding is; any ``error`` fails the review."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@attrs.frozen(kw_only=True)
class ReviewSource:
    """One immutable source the review exposes: its path, digest and length in the revision."""

    path: str = wire_field(max_len=PATH_MAX_CHARS)
    sha256: str = digest_field()
    byte_length: int = wire_field()

    def __attrs_post_init__(self) -> None:
        validate_reference_path(self.path, path="$.path")


@attrs.frozen(kw_only=True)
class ReviewRequest:
    """The immutable review request; the authority rebuilds it from the revision on import."""

    version: int = wire_field(version=True)
    audience: str = id_field()
    repository_id: str = wire_field(min_len=1, max_len=257)
    workflow_profile_id: str = id_field()
    step_id: str = id_field()
    collector_profile_id: str = id_field()
    collector_profile_digest: str = digest_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    execution_operation_id: str = id_field()
    fence: int = wire_field(lo=1)
    revision: str = digest_field()
    commit: str = wire_field(max_len=64, pattern=COMMIT_PATTERN)
    executable_sha256: str = digest_field()
    provider_scope: str = id_field()
    transport_basis: TransportBasis = wire_field()
    model: str = id_field()
    policy_digest: str = digest_field()
    sources: tuple[ReviewSource, ...] = wire_field(max_len=SOURCE_MAX_PATHS)
    max_calls: int = wire_field(lo=1, hi=1000)
    max_input_tokens: int = wire_field(lo=1)
    max_output_tokens: int = wire_field(lo=1)
    timeout_ms: int = wire_field(lo=1)


def build_review_request(
    binding: PinnedBinding,
    profile: FiniteReviewCollectorProfile,
    sources: Mapping[str, bytes],
) -> ReviewRequest:
    """Return the review request for ``binding`` under ``profile``.

    ``sources`` maps each required path to its bytes in the revision; a required path missing
    from the revision is ``NOT_FOUND`` (a review cannot silently skip an obligation).
    """
    rows = []
    for path in profile.required_paths:
        if path not in sources:
            raise TaskError(
                ErrorCode.NOT_FOUND, f"required review path {path!r} is not in the revision"
            )
        data = sources[path]
        rows.append(ReviewSource(path=path, sha256=sha256_hex(data), byte_length=len(data)))
    return ReviewRequest(
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
        executable_sha256=profile.executable_sha256,
        provider_scope=profile.provider_scope,
        transport_basis=profile.transport_basis,
        model=profile.model,
        policy_digest=profile.policy_digest,
        sources=tuple(rows),
        max_calls=profile.max_calls,
        max_input_tokens=profile.max_input_tokens,
        max_output_tokens=profile.max_output_tokens,
        timeout_ms=profile.timeout_ms,
    )


@attrs.frozen(kw_only=True)
class ReviewFinding:
    """One finding on one path."""

    path: str = wire_field(max_len=PATH_MAX_CHARS)
    severity: Severity = wire_field()
    message: str = wire_field(max_len=FINDING_MAX_CHARS)


@attrs.frozen(kw_only=True)
class ReviewCall:
    """One transport call: its reservation, what it exposed and the raw answer retained."""

    index: int = wire_field()
    ticket: str = digest_field()
    reservation_sha256: str = digest_field()
    prompt_sha256: str = digest_field()
    source_paths: tuple[str, ...] = wire_field(max_len=1, item_max_len=PATH_MAX_CHARS)
    response: str = wire_field(max_len=RESPONSE_MAX_CHARS)
    response_sha256: str = digest_field()
    input_tokens: int = wire_field()
    output_tokens: int = wire_field()


@attrs.frozen(kw_only=True)
class ReviewRecord:
    """The complete derived review: calls, coverage, findings, outcome and budgets used."""

    version: int = wire_field(version=True)
    request_sha256: str = digest_field()
    transport_basis: TransportBasis = wire_field()
    executable_sha256_before: str = digest_field()
    executable_sha256_after: str = digest_field()
    calls: tuple[ReviewCall, ...] = wire_field(max_len=1000)
    coverage: tuple[str, ...] = wire_field(max_len=SOURCE_MAX_PATHS, item_max_len=PATH_MAX_CHARS)
    findings: tuple[ReviewFinding, ...] = wire_field(max_len=4096)
    outcome: ReviewOutcome = wire_field()
    input_tokens: int = wire_field()
    output_tokens: int = wire_field()
