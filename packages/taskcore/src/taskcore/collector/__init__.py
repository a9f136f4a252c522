"""The local collector: snapshot a revision, run a pinned recipe, record, sign, retain.

* :mod:`~taskcore.collector.records`: ExecutionRequest / ExecutionRecord and their rules;
* :mod:`~taskcore.collector.review`: ReviewRequest / ReviewRecord, the finite controller and
  replay validation;
* :mod:`~taskcore.collector.transfer`: the signed transfer envelope;
* :mod:`~taskcore.collector.descriptor`: the server-derived descriptor and the pinned request;
* :mod:`~taskcore.collector.state`: the owner-private state directory (key, reservations,
  retained transfers);
* :mod:`~taskcore.collector.snapshot`: exact materialization of a commit;
* :mod:`~taskcore.collector.runtime`: the local process runtime and its identity;
* :mod:`~taskcore.collector.collect`: one collection, end to end;
* :mod:`~taskcore.collector.client`: the client flows over a running service (checkpoint,
  collect once, retry an upload), written against the ``WorkflowClient`` protocol.

``docs/collector.md`` describes the format and the trust it does (and does not) give.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing the package must stay cheap
if TYPE_CHECKING:
    from taskcore.collector.collect import CollectResult, collect_command
    from taskcore.collector.descriptor import (
        CollectorDescriptor,
        PinnedBinding,
        build_execution_request,
        collector_profile_digest,
    )
    from taskcore.collector.records import (
        ExecutionOutcome,
        ExecutionRecord,
        ExecutionRequest,
        RuntimeIdentity,
        SandboxMode,
        check_execution_record,
        runtime_identity_digest,
    )
    from taskcore.collector.runtime import detect_sandbox, probe_runtime, run_recipe
    from taskcore.collector.state import CollectorKey, CollectorState, default_state_dir
    from taskcore.collector.transfer import (
        DecodedTransfer,
        OriginGrant,
        TransferHeader,
        TransferKind,
        decode_record,
        decode_transfer,
        encode_transfer,
    )

_SOURCES: dict[str, tuple[str, ...]] = {
    "taskcore.collector.collect": (
        "CollectResult",
        "collect_command",
    ),
    "taskcore.collector.descriptor": (
        "CollectorDescriptor",
        "PinnedBinding",
        "build_execution_request",
        "collector_profile_digest",
    ),
    "taskcore.collector.records": (
        "ExecutionOutcome",
        "ExecutionRecord",
        "ExecutionRequest",
        "RuntimeIdentity",
        "SandboxMode",
        "check_execution_record",
        "runtime_identity_digest",
    ),
    "taskcore.collector.runtime": (
        "detect_sandbox",
        "probe_runtime",
        "run_recipe",
    ),
    "taskcore.collector.state": (
        "CollectorKey",
        "CollectorState",
        "default_state_dir",
    ),
    "taskcore.collector.transfer": (
        "DecodedTransfer",
        "OriginGrant",
        "TransferHeader",
        "TransferKind",
        "decode_record",
        "decode_transfer",
        "encode_transfer",
    ),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}


def __getattr__(name: str) -> object:
    """Load an exported name from its submodule on first use (:pep:`562`)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'taskcore.collector' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "CollectResult",
    "CollectorDescriptor",
    "CollectorKey",
    "CollectorState",
    "DecodedTransfer",
    "ExecutionOutcome",
    "ExecutionRecord",
    "ExecutionRequest",
    "OriginGrant",
    "PinnedBinding",
    "RuntimeIdentity",
    "SandboxMode",
    "TransferHeader",
    "TransferKind",
    "build_execution_request",
    "check_execution_record",
    "collect_command",
    "collector_profile_digest",
    "decode_record",
    "decode_transfer",
    "default_state_dir",
    "detect_sandbox",
    "encode_transfer",
    "probe_runtime",
    "run_recipe",
    "runtime_identity_digest",
]
