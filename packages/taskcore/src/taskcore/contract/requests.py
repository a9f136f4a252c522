"""Requests agents send, and the named-reference answer.

Claim, mutation (heartbeat, cancel, reconcile), status, instructions and named-reference
fetches.

Every mutation carries its own idempotency ``request_id``. The journal binds a request ID to
the exact canonical bytes returned by
:func:`taskcore.contract.identity.request_canonical_bytes` (the request plus the
authenticated actor and the action), so an identical retry is recognised and a changed field
under the same ID conflicts. Status, instruction and reference reads carry no request ID.
"""

from __future__ import annotations

import enum

import attrs

from taskcore.codec import wire_field
from taskcore.contract.common import (
    ID,
    ExecutorBinding,
    digest_field,
    id_field,
)
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    ID_MAX_CHARS,
    LEASE_MAX_MS,
    LEASE_MIN_MS,
    REASON_MAX_CHARS,
    REFERENCE_BODY_MAX_BYTES,
    SCHEMA_VERSIONS_MAX,
)

__all__ = [
    "InstructionsRequest",
    "MutationAction",
    "ReferenceFetchRequest",
    "ReferenceFetchResponse",
    "ReferenceStatus",
    "TaskClaimRequest",
    "TaskMutationRequest",
    "TaskStatusRequest",
]


class MutationAction(enum.Enum):
    """The mutation kinds a :class:`TaskMutationRequest` can carry."""

    HEARTBEAT = "heartbeat"
    CANCEL = "cancel"
    RECONCILE = "reconcile"


@attrs.frozen(kw_only=True)
class TaskClaimRequest:
    """Claim one task: a fresh execution identity and a bounded requested lease."""

    version: int = wire_field(version=True)
    request_id: str = id_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    execution_operation_id: str = id_field()
    requested_lease_ms: int = wire_field(lo=LEASE_MIN_MS, hi=LEASE_MAX_MS)
    executor: ExecutorBinding | None = wire_field()


@attrs.frozen(kw_only=True)
class TaskMutationRequest:
    """Heartbeat, cancel or reconcile one exact attempt at one exact fence.

    ``reason`` is required for cancel and reconcile and must be ``null`` for a heartbeat.
    """

    version: int = wire_field(version=True)
    request_id: str = id_field()
    action: MutationAction = wire_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    execution_operation_id: str = id_field()
    executor: ExecutorBinding | None = wire_field()
    fence: int = wire_field(lo=1)
    reason: str | None = wire_field(max_len=REASON_MAX_CHARS)

    def __attrs_post_init__(self) -> None:
        if self.action is MutationAction.HEARTBEAT and self.reason is not None:
            raise TaskError(
                ErrorCode.INVALID_VALUE, "a heartbeat carries no reason", path="$.reason"
            )
        if self.action is not MutationAction.HEARTBEAT and not self.reason:
            raise TaskError(
                ErrorCode.MISSING_FIELD,
                f"{self.action.value} needs a reason (one line, for the audit)",
                path="$.reason",
            )


@attrs.frozen(kw_only=True)
class TaskStatusRequest:
    """A side-effect-free read of one exact attempt; it consumes no request ID."""

    version: int = wire_field(version=True)
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()


@attrs.frozen(kw_only=True)
class InstructionsRequest:
    """Ask for a task's instruction entrypoint, offering the schema versions the client reads."""

    version: int = wire_field(version=True)
    task_id: str = id_field()
    task_digest: str = digest_field()
    supported_schema_versions: tuple[int, ...] = wire_field(min_len=1, max_len=SCHEMA_VERSIONS_MAX)


@attrs.frozen(kw_only=True)
class ReferenceFetchRequest:
    """Fetch one named reference of one exact task.

    The caller names the reference and commits to its digest and schema; the server derives
    repository, revision and path from the stored task, never from this request.
    """

    version: int = wire_field(version=True)
    task_id: str = id_field()
    task_digest: str = digest_field()
    name: str = id_field()
    expected_sha256: str = digest_field()
    expected_schema_version: int = wire_field()


class ReferenceStatus(enum.Enum):
    """Distinct, bounded outcomes of a reference fetch; there is no partial success."""

    AVAILABLE = "available"
    MISSING = "missing"
    DENIED = "denied"
    UNCERTAIN = "uncertain"
    LIMIT = "limit"


@attrs.frozen(kw_only=True)
class ReferenceFetchResponse:
    """A reference answer. ``content`` (UTF-8 text) and ``byte_length`` only when available.

    ``code`` is a stable reason for the non-available outcomes (``not_in_revision``,
    ``digest_mismatch``, ``too_large``, ...).
    """

    status: ReferenceStatus = wire_field()
    name: str = id_field()
    sha256: str = digest_field()
    content: str | None = wire_field(max_len=REFERENCE_BODY_MAX_BYTES)
    byte_length: int | None = wire_field(hi=REFERENCE_BODY_MAX_BYTES)
    code: str | None = wire_field(max_len=ID_MAX_CHARS, pattern=ID)

    def __attrs_post_init__(self) -> None:
        available = self.status is ReferenceStatus.AVAILABLE
        if available != (self.content is not None) or available != (self.byte_length is not None):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "content and byte_length are present exactly when available",
                path="$.content",
            )
        if available == (self.code is not None):
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "a reason code is present exactly when not available",
                path="$.code",
            )
        if self.content is not None:
            # Available content is bounded UTF-8 whose SHA-256 is the committed digest; a
            # response that would hand over anything else is refused, never partially sent.
            body = self.content.encode("utf-8", "surrogatepass")
            if len(body) > REFERENCE_BODY_MAX_BYTES:
                raise TaskError(
                    ErrorCode.OUT_OF_BOUNDS,
                    f"content is {len(body)} bytes; the limit is {REFERENCE_BODY_MAX_BYTES}",
                    path="$.content",
                )
            if self.byte_length != len(body):
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    f"byte_length must be the UTF-8 length of content ({len(body)})",
                    path="$.byte_length",
                )
            if sha256_hex(body) != self.sha256:
                raise TaskError(
                    ErrorCode.BINDING_MISMATCH,
                    "sha256 is not the SHA-256 of content",
                    path="$.sha256",
                )
