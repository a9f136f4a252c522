"""Shared pieces of the v1 workflow task contract: patterns, enums and small identities.

Wire names are the contract: enum values are the declared snake_case spellings and never
change within version 1.

>>> AgentIdentity(owner_id="acme", agent_id="tok-1")
AgentIdentity(owner_id='acme', agent_id='tok-1')
>>> TrustClass("registered_executor_observation").wire_selectable
True
"""

from __future__ import annotations

import enum
from typing import Any, Final, Literal

import attrs

from taskcore.codec import wire_field
from taskcore.limits import (
    ACTION_HINT_MAX_CHARS,
    CAPABILITY_MAX_CHARS,
    ID_MAX_CHARS,
    SCHEMA_VERSIONS_MAX,
)

__all__ = [
    "CAPABILITY",
    "HEX64",
    "HEX128",
    "ID",
    "REPOSITORY_ID",
    "REPOSITORY_ID_MAX_CHARS",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "ActionClass",
    "AgentIdentity",
    "AssertionOutcome",
    "CriterionMode",
    "CriterionOutcome",
    "ExecutorBinding",
    "GraphStatus",
    "SchemaMismatch",
    "TrustClass",
    "WorkflowProgression",
    "digest_field",
    "id_field",
    "repository_field",
]

CAPABILITY: Final = "agentscm.agent-workflow-tasks/v1"
"""The capability string of this contract."""
SCHEMA_VERSION: Final = 1
"""The schema version of every v1 document."""
SUPPORTED_SCHEMA_VERSIONS: Final = (1,)
"""Schema versions this server speaks."""

ID: Final = r"[A-Za-z0-9._-]{1,128}"
"""Identifiers and codes (seed: ``[A-Za-z0-9._-]{1,128}``)."""
_SEGMENT: Final = r"(?!\.\.?(?:/|$))[A-Za-z0-9._-]{1,128}"
REPOSITORY_ID: Final = rf"{_SEGMENT}(?:/{_SEGMENT})?"
"""A repository: one identifier or ``OWNER/NAME`` (seed ``--repository OWNER/NAME``).

Each part matches :data:`ID` and is never ``.`` or ``..``; at most 257 characters in all.
"""
REPOSITORY_ID_MAX_CHARS: Final = 2 * ID_MAX_CHARS + 1
"""The longest repository ID: ``OWNER/NAME`` of two 128-character identifiers."""
HEX64: Final = r"[0-9a-f]{64}"
"""A SHA-256 digest or Ed25519 public key: 64 lowercase hex characters."""
HEX128: Final = r"[0-9a-f]{128}"
"""An Ed25519 signature: 128 lowercase hex characters."""


def id_field(**kwargs: Any) -> Any:
    """A required identifier field (``[A-Za-z0-9._-]{1,128}``)."""
    return wire_field(max_len=ID_MAX_CHARS, pattern=ID, **kwargs)


def repository_field(**kwargs: Any) -> Any:
    """A required repository ID field: one identifier or ``OWNER/NAME``.

    >>> import re
    >>> [bool(re.fullmatch(REPOSITORY_ID, v)) for v in ("calc", "acme/calc", "a/b/c", "../x", "a/..")]
    [True, True, False, False, False]
    """
    return wire_field(max_len=REPOSITORY_ID_MAX_CHARS, pattern=REPOSITORY_ID, **kwargs)


def digest_field(**kwargs: Any) -> Any:
    """A required 64-hex digest field."""
    return wire_field(max_len=64, pattern=HEX64, **kwargs)


class TrustClass(enum.Enum):
    """Who stands behind a result (seed "Trust and criterion results").

    Only ``agent_assertion`` and ``registered_executor_observation`` may be selected on the
    wire. ``independent_controller_evidence`` is controller-owned; the authority-validated
    collector dependency is assigned internally and has no wire spelling at all.
    """

    AGENT_ASSERTION = "agent_assertion"
    REGISTERED_EXECUTOR_OBSERVATION = "registered_executor_observation"
    INDEPENDENT_CONTROLLER_EVIDENCE = "independent_controller_evidence"

    @property
    def wire_selectable(self) -> bool:
        """Whether a TaskResultAssertion may carry this class."""
        return self is not TrustClass.INDEPENDENT_CONTROLLER_EVIDENCE


class CriterionMode(enum.Enum):
    """Who may speak for a criterion."""

    CONTROLLER_ONLY = "controller_only"
    OBSERVATION_ELIGIBLE = "observation_eligible"


class GraphStatus(enum.Enum):
    """Whether a step must succeed for the subject to qualify."""

    REQUIRED = "required"
    OPTIONAL = "optional"


class ActionClass(enum.Enum):
    """What kind of work a step is; fixed rules derive criterion eligibility from it.

    ``review`` steps are controller-only: no ordinary observation may claim them.
    """

    IMPLEMENT = "implement"
    TEST = "test"
    BUILD = "build"
    LINT = "lint"
    REVIEW = "review"


class WorkflowProgression(enum.Enum):
    """The one permitted way a task progresses (instruction entrypoint)."""

    AGENT_RESULT = "agent_result"
    """Claim, work, return a result (assertion or registered observation); never qualifying."""
    COLLECTOR = "collector"
    """Collector claim, trusted collection, signed upload, authority finalization."""
    CONTROLLER = "controller"
    """Controller-owned; the agent has nothing to claim."""


class CriterionOutcome(enum.Enum):
    """The outcome of one criterion row."""

    PASSED = "passed"
    FAILED = "failed"
    UNCERTAIN = "uncertain"
    NOT_CLAIMED = "not_claimed"


class AssertionOutcome(enum.Enum):
    """The outcome a result asserts for the whole task."""

    PASSED = "passed"
    FAILED = "failed"
    UNCERTAIN = "uncertain"


@attrs.frozen(kw_only=True)
class AgentIdentity:
    """The authenticated owner and agent (derived from the credential, never chosen)."""

    owner_id: str = id_field()
    agent_id: str = id_field()


@attrs.frozen(kw_only=True)
class ExecutorBinding:
    """The enrolled executor registration a result or attempt is attributed to."""

    registration_id: str = id_field()
    executor_id: str = id_field()
    registration_epoch: int = wire_field(lo=1)
    verification_key_id: str = id_field()


@attrs.frozen(kw_only=True)
class SchemaMismatch:
    """The explicit answer to a request for a schema version this server does not speak.

    ``supported_schema_versions`` echoes what the caller offered; ``server_schema_versions``
    lists this server's; ``action`` is a fixed retry hint, never a command.
    """

    status: Literal["schema_mismatch"] = wire_field()
    capability: str = wire_field(max_len=CAPABILITY_MAX_CHARS)
    required_schema_version: int = wire_field()
    supported_schema_versions: tuple[int, ...] = wire_field(max_len=SCHEMA_VERSIONS_MAX)
    server_schema_versions: tuple[int, ...] = wire_field(max_len=SCHEMA_VERSIONS_MAX)
    action: str = wire_field(max_len=ACTION_HINT_MAX_CHARS)


SCHEMA_MISMATCH_ACTION: Final = (
    "reinstall an agent-task client that speaks one of server_schema_versions, then retry"
)
"""The fixed action hint of every schema mismatch."""


def schema_mismatch(offered: tuple[int, ...]) -> SchemaMismatch:
    """Return the schema-mismatch answer for a caller that offered ``offered``.

    >>> schema_mismatch((2,)).server_schema_versions
    (1,)
    """
    return SchemaMismatch(
        status="schema_mismatch",
        capability=CAPABILITY,
        required_schema_version=SCHEMA_VERSION,
        supported_schema_versions=tuple(offered[:SCHEMA_VERSIONS_MAX]),
        server_schema_versions=SUPPORTED_SCHEMA_VERSIONS,
        action=SCHEMA_MISMATCH_ACTION,
    )


__all__ += ["SCHEMA_MISMATCH_ACTION", "schema_mismatch"]
