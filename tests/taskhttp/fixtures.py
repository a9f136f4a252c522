"""A live service for adapter tests: a test registry, real tokens, uvicorn on a real socket.

The registry holds small operations of every shape the doors must carry (queue, admin,
gate and workflow families; read, write and destructive risks; a raw-byte upload; one that
raises any ErrorCode on request). They keep their notes per workspace, so a test can see
that the workspace comes from the token.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field

import attrs
from taskcore import (
    Actor,
    CallContext,
    ErrorCode,
    Operation,
    Registry,
    RiskClass,
    Service,
    Surface,
    TaskError,
    Tier,
    TxMode,
)
from taskcore.auth import issue_token, revoke_token
from taskcore.codec import wire_field
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES, QUEUE_PAYLOAD_MAX_BYTES
from taskcore.testing import op as make_op
from taskhttp import BackgroundServer, create_app

KEY = r"[a-z0-9]{1,16}"


@attrs.frozen(kw_only=True)
class NoteIn:
    """A note to keep."""

    key: str = wire_field(pattern=KEY, doc="note key")
    text: str = wire_field(max_len=64)


@attrs.frozen(kw_only=True)
class NoteOut:
    """A kept note."""

    key: str = wire_field()
    text: str = wire_field()
    workspace: str = wire_field()


@attrs.frozen(kw_only=True)
class KeyIn:
    """A note key."""

    key: str = wire_field(pattern=KEY)


@attrs.frozen(kw_only=True)
class RaiseIn:
    """An error code to raise."""

    code: str = wire_field(max_len=64)


@attrs.frozen(kw_only=True)
class BigIn:
    """A large text (bounded above the ordinary body limit)."""

    text: str = wire_field(max_len=QUEUE_PAYLOAD_MAX_BYTES * 8)


@attrs.frozen(kw_only=True)
class EchoIn:
    """Workflow echo input."""

    text: str = wire_field(max_len=64)


@dataclass
class Gate:
    """Lets a test hold handlers of ``demo.slow`` in flight."""

    entered: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    release: threading.Event = field(default_factory=threading.Event)


def build_registry(*, upload: bool = True, gate: Gate | None = None) -> Registry:
    """The test registry (see the module docstring)."""
    notes: dict[tuple[str, str], str] = {}
    lock = threading.Lock()
    hold = gate or Gate()
    if gate is None:
        hold.release.set()

    def put(ctx: CallContext, req: NoteIn) -> NoteOut:
        with lock:
            notes[(ctx.actor.workspace, req.key)] = req.text
        return NoteOut(key=req.key, text=req.text, workspace=ctx.actor.workspace)

    def get(ctx: CallContext, req: KeyIn) -> NoteOut:
        with lock:
            text = notes.get((ctx.actor.workspace, req.key))
        if text is None:
            raise TaskError(ErrorCode.NOT_FOUND, f"no note {req.key!r} in this workspace")
        return NoteOut(key=req.key, text=text, workspace=ctx.actor.workspace)

    def raise_code(ctx: CallContext, req: RaiseIn) -> dict:
        try:
            code = ErrorCode.from_wire(req.code)
        except ValueError:
            raise TaskError(ErrorCode.INVALID_VALUE, "not a code", path="$.code") from None
        raise TaskError(code, f"raised {code.value} on request")

    def slow(ctx: CallContext, req: KeyIn) -> dict:
        hold.entered.release()
        hold.release.wait(60)
        return {"key": req.key}

    def echo(ctx: CallContext, req: EchoIn) -> dict:
        assert ctx.route is not None
        return {
            "repository": ctx.route.repository,
            "profile": ctx.route.profile,
            "workspace": ctx.actor.workspace,
            "text": req.text,
        }

    def upload_handler(ctx: CallContext, data: bytes) -> dict:
        assert ctx.route is not None
        return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def op(name: str, handler, input_type, **kw) -> Operation:
        return make_op(name, handler, input_type=input_type, **kw)

    reg = Registry()
    reg.register(
        op(
            "demo.note",
            put,
            NoteIn,
            risk=RiskClass.WRITE,
            mcp=True,
            output_type=NoteOut,
            idempotent=False,
        )
    )
    reg.register(op("demo.read", get, KeyIn, mcp=True, output_type=NoteOut))
    reg.register(op("demo.hidden", get, KeyIn))
    reg.register(op("demo.destroy", get, KeyIn, risk=RiskClass.DESTRUCTIVE, mcp=True))
    reg.register(
        op(
            "demo.big",
            lambda c, r: {"size": len(r.text)},
            BigIn,
            max_input_bytes=QUEUE_PAYLOAD_MAX_BYTES * 8 + 1024,
        )
    )
    reg.register(op("demo.slow", slow, KeyIn, risk=RiskClass.WRITE, tx=TxMode.OWN))
    reg.register(op("demo.admin", get, KeyIn, surface=Surface.ADMIN, min_tier=Tier.ADMIN))
    reg.register(op("demo.raise", raise_code, RaiseIn, surface=Surface.ADMIN, mcp=True))
    reg.register(
        op("demo.gate", lambda c, r: {"gate": r.key}, KeyIn, surface=Surface.GATE, mcp=True)
    )
    reg.register(op("workflow.echo", echo, EchoIn, surface=Surface.WORKFLOW, route_required=True))
    reg.register(
        op("workflow.raise", raise_code, RaiseIn, surface=Surface.WORKFLOW, route_required=True)
    )
    if upload:
        reg.register(
            op(
                "workflow.collector_upload",
                upload_handler,
                bytes,
                surface=Surface.WORKFLOW,
                route_required=True,
                risk=RiskClass.WRITE,
                max_input_bytes=COLLECTOR_ENVELOPE_MAX_BYTES,
            )
        )
    return reg


TOKENS = {
    "agent": ("w1", Tier.AGENT, 1),
    "member": ("w1", Tier.MEMBER, 2),
    "admin": ("w1", Tier.ADMIN, 3),
    "reader": ("w1", Tier.AGENT, 0),
    "other": ("w2", Tier.AGENT, 1),
    "revoked": ("w1", Tier.AGENT, 1),
}


class Live:
    """A running service: ``url``, ``service``, ``tokens`` by role, ``headers(role)``."""

    def __init__(
        self,
        data_dir,
        *,
        upload: bool = True,
        gate: Gate | None = None,
        public_url: str | None = None,
    ) -> None:
        self.service = Service.open(data_dir, registry=build_registry(upload=upload, gate=gate))
        self.tokens: dict[str, str] = {}
        self.token_ids: dict[str, str] = {}
        for role, (workspace, tier, autonomy) in TOKENS.items():
            issued = issue_token(
                self.service.storage,
                self.service.clock,
                workspace=workspace,
                tier=tier,
                autonomy=autonomy,
                name=role,
            )
            self.tokens[role] = issued.token
            self.token_ids[role] = issued.record.token_id
        revoke_token(self.service.storage, self.service.clock, self.token_ids["revoked"])
        self.server = BackgroundServer(create_app(self.service, public_url=public_url))
        self.url = ""

    def start(self) -> Live:
        self.url = self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()
        self.service.close()

    def headers(self, role: str | None = "agent", **extra: str) -> dict[str, str]:
        out = {"Content-Type": "application/json"}
        if role is not None:
            out["Authorization"] = f"Bearer {self.tokens[role]}"
        out.update(extra)
        return out

    def issue(self, role: str) -> tuple[str, str]:
        workspace, tier, autonomy = TOKENS[role]
        issued = issue_token(
            self.service.storage,
            self.service.clock,
            workspace=workspace,
            tier=tier,
            autonomy=autonomy,
        )
        return issued.token, issued.record.token_id

    def revoke(self, token_id: str) -> None:
        revoke_token(self.service.storage, self.service.clock, token_id)

    def actor(self, role: str) -> Actor:
        return self.service.authenticate(self.tokens[role])
