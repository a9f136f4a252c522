"""The demo operations and helpers the front-door tests share (test_service, test_admission)."""

import attrs
import pytest
from taskcore.actors import Actor, RiskClass, Tier
from taskcore.clock import FakeClock
from taskcore.codec import wire_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import (
    CallContext,
    CommitThenRefuse,
    RawJson,
    Registry,
    Route,
    Service,
    Surface,
    TxMode,
)
from taskcore.store.audit_api import AuditEvent
from taskcore.testing import op as make_op


@attrs.frozen(kw_only=True)
class TextIn:
    text: str = wire_field(max_len=16)


@attrs.frozen(kw_only=True)
class NoIn:
    pass


def demo_op(name, handler, **kw):
    return make_op(name, handler, **{"input_type": TextIn, **kw})


def note(ctx: CallContext, req: TextIn) -> dict:
    # A visible write inside the call's transaction: an extra audit row.
    ctx.transaction().audit.append(
        AuditEvent(
            at_ms=ctx.now_ms,
            actor="note",
            workspace=ctx.actor.workspace,
            operation="note",
            input_digest="0" * 64,
            outcome=req.text,
        )
    )
    if req.text == "boom":
        raise TaskError(ErrorCode.CONFLICT, "refused after writing")
    if req.text == "bug":
        raise ValueError("a handler bug")
    return {"text": req.text, "workspace": ctx.actor.workspace}


def _keep_then_refuse(ctx: CallContext, req: TextIn):
    note(ctx, req)
    return CommitThenRefuse(TaskError(ErrorCode.LEASE_RUNAWAY, "requeued; renewal refused"))


def _route_echo(ctx: CallContext, req: TextIn) -> dict:
    assert ctx.route is not None
    return {"repository": ctx.route.repository, "profile": ctx.route.profile, "text": req.text}


def demo_registry():
    reg = Registry()
    reg.register(demo_op("demo.note", note, risk=RiskClass.WRITE))
    reg.register(
        demo_op("demo.admin", lambda ctx, req: {}, min_tier=Tier.ADMIN, surface=Surface.ADMIN)
    )
    reg.register(demo_op("demo.destroy", lambda ctx, req: {}, risk=RiskClass.DESTRUCTIVE))
    reg.register(demo_op("demo.tool", lambda ctx, req: {"ok": True}, mcp=True))
    reg.register(
        demo_op(
            "demo.raw", lambda ctx, req: {"size": len(req)}, input_type=bytes, max_input_bytes=8
        )
    )
    reg.register(demo_op("demo.own", lambda ctx, req: {"tx": ctx.tx is None}, tx=TxMode.OWN))
    reg.register(demo_op("demo.keep", _keep_then_refuse, risk=RiskClass.WRITE))
    reg.register(
        demo_op(
            "demo.keep_own",
            lambda ctx, req: CommitThenRefuse(TaskError(ErrorCode.CONFLICT, "own refusal")),
            tx=TxMode.OWN,
        )
    )
    reg.register(demo_op("demo.retained", lambda ctx, req: RawJson(b'{"b":1,"a":2}')))
    reg.register(
        demo_op("workflow.echo", _route_echo, surface=Surface.WORKFLOW, route_required=True)
    )
    reg.register(
        demo_op(
            "workflow.upload",
            lambda ctx, req: {"size": len(req)},
            input_type=bytes,
            surface=Surface.WORKFLOW,
            route_required=True,
        )
    )
    return reg


AGENT = Actor(token_id="t-agent", workspace="w1", tier=Tier.AGENT, autonomy=1)
ROUTE = Route(repository="acme/widgets", profile="default")


def code_of(fn, *args, **kwargs):
    with pytest.raises(TaskError) as info:
        fn(*args, **kwargs)
    return info.value.code


def limited_service(tmp_path, **limits):
    from taskcore.ratelimit import RateLimits

    return Service.open(
        tmp_path / "limited",
        clock=FakeClock(),
        registry=demo_registry(),
        rate_limits=RateLimits(**limits),
    )
