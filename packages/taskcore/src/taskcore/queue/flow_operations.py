"""The queue-flow operations (issue 28): ``agenttask.createMany``, ``agenttask.limit.set``/``list``.

Registered by their own :func:`register` (listed in the registry's operation modules and the
CLI's queue commands), so the seed's table in :mod:`taskcore.queue.operations` stays as it is.
``uniqueKey``, ``uniqueFor``, ``concurrencyKey`` and ``after`` are fields of
``agenttask.create`` (:class:`~taskcore.queue.requests.CreateIn`); :mod:`taskcore.queue.flow`
holds the decisions.

>>> from taskcore.service import Registry
>>> registry = Registry()
>>> register(registry)
>>> [op.name for op in registry]
['agenttask.createMany', 'agenttask.limit.set', 'agenttask.limit.list']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from taskcore.actors import RiskClass, Tier
from taskcore.limits import (
    CONCURRENCY_LIMIT_DEFAULT,
    CREATE_MANY_BODY_MAX_BYTES,
    CREATE_MANY_MAX,
    LEASE_DEFAULT_MS,
    LEASE_MAX_MS,
)
from taskcore.queue import flow, tasks
from taskcore.queue.common import QueueCall
from taskcore.queue.requests import CreateManyIn, LimitSetIn, NoInput
from taskcore.queue.types import CreateManyResult, LimitList, LimitView
from taskcore.service import CallContext, Operation, Registry, Surface

__all__ = ["FLOW_VERBS", "register"]

R = TypeVar("R")

FLOW_VERBS: tuple[str, ...] = (
    "agenttask.createMany",
    "agenttask.limit.set",
    "agenttask.limit.list",
)
"""The operations this module registers."""


def _in_tx(fn: Callable[[QueueCall, Any], R]) -> Callable[[CallContext, Any], R]:
    def handler(ctx: CallContext, request: Any) -> R:
        lease_max = ctx.service.config.lease_max_ms
        call = QueueCall(
            tx=ctx.transaction(),
            actor=ctx.actor,
            now_ms=ctx.now_ms,
            lease_ms=min(LEASE_DEFAULT_MS, lease_max),
            lease_max_ms=min(LEASE_MAX_MS, lease_max),
        )
        return fn(call, request)

    return handler


def _operations() -> tuple[Operation[Any, Any], ...]:
    return (
        Operation(
            name="agenttask.createMany",
            summary=f"Queue up to {CREATE_MANY_MAX} tasks in one transaction, all or nothing.",
            input_type=CreateManyIn,
            output_type=CreateManyResult,
            min_tier=Tier.MEMBER,
            risk=RiskClass.WRITE,
            idempotent=False,
            mcp=True,
            surface=Surface.QUEUE,
            handler=_in_tx(tasks.create_many),
            max_input_bytes=CREATE_MANY_BODY_MAX_BYTES,
            description="{tasks: [create requests]}: each is what agenttask.create takes and "
            "answers what it would (deduplicated ones included), in order. One refused entry "
            "refuses the call and creates nothing; its path names the entry ($.tasks[3].verb). "
            "Each task created is audited (its own event, subject the task). An entry's after "
            "may name a task created earlier in the same call.",
        ),
        Operation(
            name="agenttask.limit.set",
            summary="Set how many tasks of a concurrencyKey may be leased at once.",
            input_type=LimitSetIn,
            output_type=LimitView,
            min_tier=Tier.ADMIN,
            risk=RiskClass.WRITE,
            idempotent=True,
            mcp=False,
            surface=Surface.ADMIN,
            handler=_in_tx(flow.set_limit),
            description="{key, max}: claimNext never leases a task whose concurrencyKey "
            "already has max live leases (0 holds them all); a key without a limit admits "
            f"{CONCURRENCY_LIMIT_DEFAULT}. Raising a limit wakes waiting claimers.",
        ),
        Operation(
            name="agenttask.limit.list",
            summary="List the workspace's concurrency limits and their live leases.",
            input_type=NoInput,
            output_type=LimitList,
            min_tier=Tier.ADMIN,
            risk=RiskClass.READ,
            idempotent=True,
            mcp=False,
            surface=Surface.ADMIN,
            handler=_in_tx(flow.list_limits),
        ),
    )


def register(registry: Registry) -> None:
    """Add the queue-flow operations to ``registry``."""
    for op in _operations():
        registry.register(op)
