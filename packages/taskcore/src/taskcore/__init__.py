"""taskcore: the pure-Python core of agent-task.

Contract types, strict decoding, canonical bytes, digests and Ed25519 signing; the journal
and its state machines on SQLite; the agent task queue; the collector; the done gate; and one
registry of operations behind :class:`~taskcore.service.Service`. Adapters (HTTP, MCP, CLI)
import only names exported here and from the public submodules listed in ``docs/adapters.md``.
"""

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

__version__ = "0.1.0"

CAPABILITY = "agentscm.agent-workflow-tasks/v1"
"""The workflow task contract capability string (version 1)."""

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
