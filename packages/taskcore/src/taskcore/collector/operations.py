"""The collector operations on the front door: ``workflow.collector_*`` and qualification.

* ``collector_claim`` (write): claim a collector step for the installed profile's key;
* ``collector_descriptor`` (read): everything the local collector needs for that attempt;
* ``collector_upload`` (write, raw bytes, at most 16 MiB): import one signed transfer; the
  HTTP adapter reaches it through ``.../agent-tasks/collector-upload``, not MCP;
* ``collector_finalize`` (write): create the v2 receipt of the current subject;
* ``qualification`` (read): qualified, subject_current, receipt_digest, revision, tasks,
  failures and ``next``.

All are ``Surface.WORKFLOW`` with the repository and profile from the route, and run in the
transaction the service opens for the call (``TxMode.WRITE``), so an import, its receipt
rows and the call's audit event commit together; the writes take the actor/workspace guard
before it opens (``Operation.hold``, the journal's lock order).
"""

from __future__ import annotations

from typing import Any

from taskcore.actors import RiskClass, Tier
from taskcore.codec import dumps
from taskcore.collector import authority
from taskcore.collector.authority_key import ensure_authority_key, sign_descriptor
from taskcore.collector.descriptor import CollectorDescriptor
from taskcore.collector.wire import (
    CollectorClaimRequest,
    DescriptorRequest,
    FinalizeOutcome,
    FinalizeRequest,
    QualificationRequest,
    QualificationResponse,
    UploadOutcome,
)
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES
from taskcore.service import (
    CallContext,
    Door,
    Operation,
    RawJson,
    Registry,
    Surface,
    TxMode,
)
from taskcore.workflow.guard import GuardAction
from taskcore.workflow.operations import guard_hold, journal_for
from taskcore.workflow.types import ClaimOutcome

__all__ = ["register"]


def _claim(ctx: CallContext, req: CollectorClaimRequest) -> RawJson:
    journal, caller = journal_for(ctx)
    return RawJson(authority.collector_claim(journal, caller, req))


def _descriptor(ctx: CallContext, req: DescriptorRequest) -> CollectorDescriptor:
    journal, caller = journal_for(ctx)
    descriptor = authority.collector_descriptor(journal.storage, caller, req)
    return sign_descriptor(descriptor, ensure_authority_key(ctx.service.config.data_dir))


def _upload(ctx: CallContext, envelope: bytes) -> RawJson:
    journal, caller = journal_for(ctx)
    return RawJson(authority.collector_upload(journal.storage, journal.clock, caller, envelope))


def _finalize(ctx: CallContext, req: FinalizeRequest) -> FinalizeOutcome:
    journal, caller = journal_for(ctx)
    return authority.collector_finalize(journal.storage, journal.clock, caller, req)


def _qualification(ctx: CallContext, req: QualificationRequest) -> RawJson:
    journal, caller = journal_for(ctx)
    answer = authority.qualification(journal.storage, journal.clock, caller, req)
    return RawJson(dumps(answer.to_json()))


_NO_MCP = frozenset({Door.HTTP, Door.CLI, Door.IN_PROCESS})

_OPERATIONS: tuple[dict[str, Any], ...] = (
    {
        "name": "collector_claim",
        "summary": "Claim a collector step's task for the installed collector profile's key.",
        "input_type": CollectorClaimRequest,
        "output_type": ClaimOutcome,
        "handler": _claim,
        "risk": RiskClass.WRITE,
        "hold": GuardAction.CLAIM,
        "description": "The executor registration comes from the installed collector profile, "
        "never the request. An identical retry returns the first outcome byte for byte.",
    },
    {
        "name": "collector_descriptor",
        "summary": "The server-derived descriptor of one claimed collector attempt (read-only).",
        "input_type": DescriptorRequest,
        "output_type": CollectorDescriptor,
        "handler": _descriptor,
        "risk": RiskClass.READ,
        "description": "Input to 'agent-task collect': the pinned request, profile, origin "
        "grant and registration, signed with the authority's own key (a remote collector "
        "verifies it against the key it pinned). Only the agent holding the attempt may read "
        "it.",
    },
    {
        "name": "collector_upload",
        "summary": "Import one signed collector transfer (raw bytes, at most 16 MiB).",
        "input_type": bytes,
        "output_type": UploadOutcome,
        "handler": _upload,
        "risk": RiskClass.WRITE,
        "hold": GuardAction.RESULT,
        "max_input_bytes": COLLECTOR_ENVELOPE_MAX_BYTES,
        "doors": _NO_MCP,
        "description": "POST the exact retained bytes to .../agent-tasks/collector-upload. An "
        "identical retry returns the historical view; changed bytes under the same upload "
        "request or attempt conflict. A validated passing record completes the dependency; "
        "only collector_finalize creates a receipt.",
    },
    {
        "name": "collector_finalize",
        "summary": "Create the v2 receipt of a Change's current subject from validated transfers.",
        "input_type": FinalizeRequest,
        "output_type": FinalizeOutcome,
        "handler": _finalize,
        "risk": RiskClass.WRITE,
        "hold": GuardAction.RESULT,
        "description": "Refused unless every required task is complete through a validated, "
        "current collector transfer; re-verifies every retained transfer. Deterministic: "
        "finalizing again returns the same receipt.",
    },
    {
        "name": "qualification",
        "summary": "Whether the Change's current subject is qualified, per task, with next.",
        "input_type": QualificationRequest,
        "output_type": QualificationResponse,
        "handler": _qualification,
        "risk": RiskClass.READ,
        "description": "Read-only and advisory: never finalizes or writes a receipt. next is "
        "data (collector_claim, reconcile, collector_finalize, checkpoint, none), never a "
        "command.",
    },
)


def register(registry: Registry) -> None:
    """Register the collector operations."""
    for spec in _OPERATIONS:
        registry.register(
            Operation(
                name="workflow." + spec["name"],
                summary=spec["summary"],
                input_type=spec["input_type"],
                output_type=spec["output_type"],
                min_tier=Tier.AGENT,
                risk=spec["risk"],
                idempotent=True,
                mcp=False,
                surface=Surface.WORKFLOW,
                handler=spec["handler"],
                tx=TxMode.WRITE,
                hold=guard_hold(spec["hold"]) if "hold" in spec else None,
                route_required=True,
                max_input_bytes=spec.get("max_input_bytes", 256 * 1024),
                doors=spec.get("doors", frozenset(Door)),
                description=spec["description"],
            )
        )
