"""Inputs of the operator reads (``observe.*``) and the token operations (``admin.token.*``).

Keys are camelCase like the queue's. Every listing takes ``cursor`` (the ``nextCursor`` of
the previous page) and ``limit`` (1..``OBSERVE_PAGE_MAX``, default ``OBSERVE_PAGE_DEFAULT``).

>>> from taskcore.codec import decode
>>> decode(AuditIn, b'{"taskId": "at_1", "code": "NOT_FOUND"}').code
'NOT_FOUND'
>>> decode(AuditIn, b'{"limit": 1000}')
Traceback (most recent call last):
taskcore.errors.TaskError: 1000 is above the maximum 200 at $.limit
"""

from __future__ import annotations

from typing import Any

import attrs

from taskcore.codec import wire_field
from taskcore.limits import AUDIT_VERB_MAX_CHARS, OBSERVE_PAGE_MAX
from taskcore.queue.requests import ID_PATTERN, VERB_PATTERN
from taskcore.queue.types import GateStatus, TaskStatus

__all__ = [
    "ApprovalsIn",
    "AuditIn",
    "BacklogIn",
    "ChangesIn",
    "RepositoriesIn",
    "SubjectIn",
    "SubjectsIn",
    "TokenCreateIn",
    "TokenRevokeIn",
    "TokensIn",
]

SEQ_PATTERN = r"[0-9]{1,19}"
"""A sequence-number cursor."""
REPOSITORY_PATTERN = r"[A-Za-z0-9._-]{1,128}(/[A-Za-z0-9._-]{1,128})?"
"""A repository ID: one identifier or ``OWNER/NAME``."""
OPERATION_PATTERN = rf"[A-Za-z][A-Za-z0-9_.]{{0,{AUDIT_VERB_MAX_CHARS - 1}}}"
CODE_PATTERN = r"[A-Z][A-Z_]{0,63}"
TOKEN_ID_PATTERN = r"[0-9a-f]{16}"  # noqa: S105 - a pattern, not a secret


def _cursor(pattern: str = ID_PATTERN) -> Any:
    return wire_field(default=None, pattern=pattern, doc="nextCursor of the previous page")


def _limit() -> Any:
    return wire_field(default=None, lo=1, hi=OBSERVE_PAGE_MAX)


@attrs.frozen(kw_only=True)
class AuditIn:
    """``observe.audit``: the workspace's audit feed, newest first, filtered."""

    actor: str | None = wire_field(default=None, pattern=ID_PATTERN, doc="a token id")
    operation: str | None = wire_field(default=None, pattern=OPERATION_PATTERN)
    code: str | None = wire_field(default=None, pattern=CODE_PATTERN, doc="OK or an error code")
    task_id: str | None = wire_field(default=None, wire="taskId", pattern=ID_PATTERN)
    since_ms: int | None = wire_field(default=None, wire="sinceMs", doc="inclusive")
    until_ms: int | None = wire_field(default=None, wire="untilMs", doc="exclusive")
    cursor: str | None = _cursor(SEQ_PATTERN)
    limit: int | None = _limit()


@attrs.frozen(kw_only=True)
class BacklogIn:
    """``observe.backlog``: the queue in drain order (priority, then age), filtered."""

    status: TaskStatus | None = wire_field(default=None)
    verb: str | None = wire_field(default=None, pattern=VERB_PATTERN)
    matter_id: str | None = wire_field(default=None, wire="matterId", pattern=ID_PATTERN)
    cursor: str | None = _cursor()
    limit: int | None = _limit()


@attrs.frozen(kw_only=True)
class ApprovalsIn:
    """``observe.approvals``: approval gates (``PENDING`` unless ``status`` says otherwise)."""

    status: GateStatus | None = wire_field(default=GateStatus.PENDING)
    cursor: str | None = _cursor()
    limit: int | None = _limit()


@attrs.frozen(kw_only=True)
class TokensIn:
    """``observe.tokens``: the workspace's tokens (never a secret)."""

    include_revoked: bool = wire_field(default=False, wire="includeRevoked")
    cursor: str | None = _cursor(TOKEN_ID_PATTERN)
    limit: int | None = _limit()


@attrs.frozen(kw_only=True)
class TokenCreateIn:
    """``admin.token.create``: a token of the caller's workspace (the secret is shown once)."""

    tier: str = wire_field(pattern=r"agent|member|admin")
    autonomy: int = wire_field(default=1, lo=0, hi=3)
    name: str = wire_field(default="", max_len=128, pattern=r"[^\x00-\x1f\x7f]*")


@attrs.frozen(kw_only=True)
class TokenRevokeIn:
    """``admin.token.revoke``: revoke one token of the caller's workspace."""

    token_id: str = wire_field(wire="tokenId", pattern=TOKEN_ID_PATTERN)


@attrs.frozen(kw_only=True)
class RepositoriesIn:
    """``observe.repositories``: the workspace's registered repositories."""

    cursor: str | None = _cursor(REPOSITORY_PATTERN)
    limit: int | None = _limit()


@attrs.frozen(kw_only=True)
class ChangesIn:
    """``observe.changes``: a repository's Changes at their current subject, newest first."""

    repository_id: str = wire_field(wire="repositoryId", pattern=REPOSITORY_PATTERN)
    cursor: str | None = _cursor(SEQ_PATTERN)
    limit: int | None = _limit()


@attrs.frozen(kw_only=True)
class SubjectsIn:
    """``observe.subjects``: every recorded subject (version) of one Change, newest first."""

    repository_id: str = wire_field(wire="repositoryId", pattern=REPOSITORY_PATTERN)
    profile_id: str = wire_field(wire="profileId", pattern=ID_PATTERN)
    change_id: str = wire_field(wire="changeId", pattern=ID_PATTERN)
    cursor: str | None = _cursor(SEQ_PATTERN)
    limit: int | None = _limit()


@attrs.frozen(kw_only=True)
class SubjectIn:
    """``observe.subject``: one subject with its tasks, attempts, transfers and receipt."""

    repository_id: str = wire_field(wire="repositoryId", pattern=REPOSITORY_PATTERN)
    subject_seq: int = wire_field(wire="subjectSeq", lo=1, hi=2**63 - 1)
