"""taskcore: the pure-Python core of agent-task.

Contract types, strict decoding, canonical bytes, digests and Ed25519 signing; the journal
and its state machines (SQLite, or PostgreSQL); the agent task queue; the collector; the done
gate; the golden vectors (:mod:`taskcore.golden`); and one registry of operations behind
:class:`~taskcore.service.Service`. A program, like each adapter (HTTP, MCP, CLI), imports the
names exported here and those of the public modules that ``docs/library.md`` lists ("The
public modules"), where a complete program opens a journal, runs a task through
:meth:`~taskcore.service.Service.dispatch`, signs and verifies an observation and checks the
golden vectors.

The names below are loaded on first use (:pep:`562`), so ``import taskcore.donegate.hook`` or
``from taskcore.errors import ErrorCode`` does not load the service, the codec and every
contract type: a Stop hook or ``agent-task --help`` pays only for what it uses.

>>> import taskcore
>>> taskcore.ErrorCode.NOT_FOUND.value
'NOT_FOUND'
"""

from __future__ import annotations

from taskcore.lazy import LazyExports

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

    __version__: str

    from taskcore.actors import MAX_AUTONOMY, Actor, RiskClass, Tier
    from taskcore.canonical import canonical_json
    from taskcore.clock import Clock, FakeClock, SystemClock
    from taskcore.codec import SCHEMA_VERSION, Codec, decode, parse_json, unstructure, wire_field
    from taskcore.digest import OBSERVATION_DOMAIN, domain_digest, sha256_hex
    from taskcore.errors import ErrorCode, ErrorKind, TaskError
    from taskcore.service import (
        CallContext,
        Door,
        Operation,
        RawJson,
        Registry,
        Response,
        Route,
        Service,
        ServiceConfig,
        Surface,
        TxMode,
    )

CAPABILITY = "agentscm.agent-workflow-tasks/v1"
"""The workflow task contract capability string (version 1)."""

_SOURCES: dict[str, tuple[str, ...]] = {
    "taskcore.actors": ("MAX_AUTONOMY", "Actor", "RiskClass", "Tier"),
    "taskcore.canonical": ("canonical_json",),
    "taskcore.clock": ("Clock", "FakeClock", "SystemClock"),
    "taskcore.codec": (
        "SCHEMA_VERSION",
        "Codec",
        "decode",
        "parse_json",
        "unstructure",
        "wire_field",
    ),
    "taskcore.digest": ("OBSERVATION_DOMAIN", "domain_digest", "sha256_hex"),
    "taskcore.errors": ("ErrorCode", "ErrorKind", "TaskError"),
    "taskcore.service": (
        "CallContext",
        "Door",
        "Operation",
        "RawJson",
        "Registry",
        "Response",
        "Route",
        "Service",
        "ServiceConfig",
        "Surface",
        "TxMode",
    ),
}
# __version__: the installed agenttask-core's (the repository's VERSION), read on first use.
_EXPORTS = LazyExports(__name__, _SOURCES, globals(), distribution="agenttask-core")


def __getattr__(name: str) -> Any:
    """Load an exported name from its module on first use (:pep:`562`)."""
    return _EXPORTS.load(name)


def __dir__() -> list[str]:
    return _EXPORTS.names()


__all__ = [
    "CAPABILITY",
    "MAX_AUTONOMY",
    "OBSERVATION_DOMAIN",
    "SCHEMA_VERSION",
    "Actor",
    "CallContext",
    "Clock",
    "Codec",
    "Door",
    "ErrorCode",
    "ErrorKind",
    "FakeClock",
    "Operation",
    "RawJson",
    "Registry",
    "Response",
    "RiskClass",
    "Route",
    "Service",
    "ServiceConfig",
    "Surface",
    "SystemClock",
    "TaskError",
    "Tier",
    "TxMode",
    "__version__",
    "canonical_json",
    "decode",
    "domain_digest",
    "parse_json",
    "sha256_hex",
    "unstructure",
    "wire_field",
]
