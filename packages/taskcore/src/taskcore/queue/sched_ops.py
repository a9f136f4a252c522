"""The scheduling operations: ``agenttask.pause``, ``.resume``, ``.paused`` (docs/queue.md "Pause").

Admin verbs (surface ``admin``, tier admin, never MCP, as every admin-only verb: docs/queue.md
"Which verbs are MCP tools"), registered by :func:`register` beside
:mod:`taskcore.queue.operations`. The scheduling fields of ``agenttask.create`` (``runAt``,
``delayMs``, ``maxAttempts``, ``backoff``) are fields of its input, so every door that
creates a task carries them.

>>> from taskcore.service import Registry
>>> registry = Registry()
>>> register(registry)
>>> sorted(op.name for op in registry)[:3]
['agenttask.pause', 'agenttask.paused', 'agenttask.resume']
"""

from __future__ import annotations

from typing import Any

from taskcore.actors import RiskClass, Tier
from taskcore.limits import LEASE_DEFAULT_MS, LEASE_MAX_MS
from taskcore.queue import schedule
from taskcore.queue.common import QueueCall
from taskcore.queue.requests import NoInput, VerbRef
from taskcore.queue.types import PausedList, VerbPaused
from taskcore.service import CallContext, Operation, Registry, Surface

__all__ = ["SCHED_VERBS", "register"]

SCHED_VERBS: tuple[str, ...] = ("agenttask.pause", "agenttask.resume", "agenttask.paused")
"""The verbs this module registers."""


def _call(ctx: CallContext) -> QueueCall:
    lease_max = ctx.service.config.lease_max_ms
    return QueueCall(
        tx=ctx.transaction(),
        actor=ctx.actor,
        now_ms=ctx.now_ms,
        lease_ms=min(LEASE_DEFAULT_MS, lease_max),
        lease_max_ms=min(LEASE_MAX_MS, lease_max),
    )


def _pause(ctx: CallContext, request: VerbRef) -> VerbPaused:
    return schedule.pause(_call(ctx), request.verb)


def _resume(ctx: CallContext, request: VerbRef) -> VerbPaused:
    return schedule.resume(_call(ctx), request.verb)


def _paused(ctx: CallContext, _: NoInput) -> PausedList:
    return schedule.list_paused(_call(ctx))


def _admin(
    name: str,
    summary: str,
    input_type: type[Any],
    output_type: type[Any],
    risk: RiskClass,
    handler: Any,
    *,
    idempotent: bool,
    description: str = "",
) -> Operation[Any, Any]:
    return Operation(
        name=name,
        summary=summary,
        input_type=input_type,
        output_type=output_type,
        min_tier=Tier.ADMIN,
        risk=risk,
        idempotent=idempotent,
        mcp=False,
        surface=Surface.ADMIN,
        handler=handler,
        description=description,
    )


def _operations() -> tuple[Operation[Any, Any], ...]:
    return (
        _admin(
            "agenttask.pause",
            "Pause a carrier verb: claimNext hands out none of its tasks until resumed.",
            VerbRef,
            VerbPaused,
            RiskClass.WRITE,
            _pause,
            idempotent=True,
            description="A registered verb only (INVALID_VALUE otherwise). Tasks stay QUEUED; "
            "claimNext finds nothing of the verb, claim by id is CONFLICT. changed: false when "
            "it already was paused.",
        ),
        _admin(
            "agenttask.resume",
            "Resume a paused carrier verb; waiting claimers are woken.",
            VerbRef,
            VerbPaused,
            RiskClass.WRITE,
            _resume,
            idempotent=True,
        ),
        _admin(
            "agenttask.paused",
            "List the workspace's paused carrier verbs.",
            NoInput,
            PausedList,
            RiskClass.READ,
            _paused,
            idempotent=True,
        ),
    )


def register(registry: Registry) -> None:
    """Register pause, resume and paused."""
    for op in _operations():
        registry.register(op)
