"""The landing operation on the front door: ``workflow.landing_check``.

``Surface.WORKFLOW`` with the repository and profile from the route, ``TxMode.OWN`` (git runs
before the read snapshot opens) and read-only: it never writes a receipt, a status or a
task row. Like every call it is audited once, so each push a pre-receive hook asks about
leaves one audit event. The pre-receive hook (:mod:`taskcore.evidence.landing_hook`) reaches
it through ``POST .../agent-tasks`` with ``{"operation": "landing_check", ...}``.
"""

from __future__ import annotations

from taskcore.actors import RiskClass, Tier
from taskcore.codec import dumps
from taskcore.evidence.landing import LandingCheckRequest, LandingCheckResponse, landing_check
from taskcore.service import CallContext, Operation, RawJson, Registry, Surface, TxMode
from taskcore.workflow.operations import journal_for

__all__ = ["register"]


def _landing_check(ctx: CallContext, req: LandingCheckRequest) -> RawJson:
    journal, caller = journal_for(ctx)
    answer = landing_check(journal.storage, journal.clock, caller, req)
    return RawJson(dumps(answer.to_json()))


def register(registry: Registry) -> None:
    """Register ``workflow.landing_check``."""
    registry.register(
        Operation(
            name="workflow.landing_check",
            summary="Whether a revision may land on a protected ref now (the binding recheck).",
            input_type=LandingCheckRequest,
            output_type=LandingCheckResponse,
            min_tier=Tier.AGENT,
            risk=RiskClass.READ,
            idempotent=True,
            mcp=False,
            surface=Surface.WORKFLOW,
            handler=_landing_check,
            tx=TxMode.OWN,
            route_required=True,
            max_input_bytes=4096,
            description="Runs admission's checks now: the ref is the profile's target, a "
            "current subject has the revision, its receipt is the one current evidence "
            "supports (enrollment, revocation, collector profile, origin grants) and every "
            "retained signed transfer verifies. Read-only; a refusal carries a stable code, "
            "failures and next.",
        )
    )
