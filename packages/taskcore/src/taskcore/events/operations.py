"""The event operations: opening a stream, and the webhook acts and reads.

=============================  =========  ======================================  ============
operation                      tier       what                                    doors
=============================  =========  ======================================  ============
``observe.events``             agent      open ``GET /v1/events`` (resume check)  HTTP, board
``observe.webhooks``           admin      the workspace's endpoints, deliveries   HTTP, board
``admin.webhook.redeliver``    admin      queue one of its deliveries again       HTTP, board
``operator.webhook_add``       operator   add an endpoint (URL, patterns, secret) local only
``operator.webhook_list``      operator   endpoints with delivery counts          local only
``operator.webhook_remove``    operator   remove an endpoint                      local only
``operator.webhook_test``      operator   queue a ``webhook.test`` message        local only
``operator.webhook_redeliver`` operator   queue any delivery again                local only
``operator.webhook_deliveries`` operator  the newest deliveries (of one endpoint) local only
=============================  =========  ======================================  ============

The operator acts are operations of :attr:`Surface.OPERATOR` like the other acts of the
operator (:mod:`taskcore.operator_ops`): reachable from ``agent-task admin webhook ...`` and in
process only, audited under the endpoint's workspace.

>>> from taskcore.service import Registry
>>> registry = Registry()
>>> register(registry)
>>> registry.get("operator.webhook_add").doors == frozenset({Door.CLI, Door.IN_PROCESS})
True
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from taskcore.actors import RiskClass, Tier
from taskcore.errors import ErrorCode, TaskError
from taskcore.events import webhooks
from taskcore.events.types import (
    DeliveryView,
    EndpointView,
    EventsIn,
    EventsOpened,
    RedeliverIn,
    WebhookAdded,
    WebhookAddIn,
    WebhookDeliveriesIn,
    WebhookDeliveryList,
    WebhookList,
    WebhookListIn,
    WebhookRedelivered,
    WebhookRef,
    WebhookRemoved,
    WebhooksIn,
    WebhooksResult,
    WebhookTestQueued,
)
from taskcore.limits import OBSERVE_PAGE_DEFAULT
from taskcore.registry import CallContext, Door, Operation, Registry, Surface
from taskcore.store.storage import Transaction
from taskcore.store.webhooks_api import EndpointRecord

__all__ = ["EVENT_OPERATIONS", "WEBHOOK_OPERATOR_OPERATIONS", "register", "webhook_registry"]

_LOCAL = frozenset({Door.CLI, Door.IN_PROCESS})
_NETWORK = frozenset({Door.HTTP, Door.BOARD, Door.IN_PROCESS})


# -- the stream ----------------------------------------------------------------------------


def _events_open(ctx: CallContext, req: EventsIn) -> EventsOpened:
    tx = ctx.transaction()
    oldest = tx.audit.oldest_seq()
    newest = tx.audit.newest_seq()
    after = newest
    if req.last_event_id is not None:
        after = req.last_event_id
        if after > newest:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                f"event {after} is ahead of this log (its newest is {newest}): was the journal "
                "restored from a backup? Reconnect without Last-Event-ID and re-read your state",
                path="$.lastEventId",
            )
        if oldest is not None and after < oldest - 1:
            raise TaskError(
                ErrorCode.EVENTS_EXPIRED,
                f"the events after {after} are past retention; the oldest event still held is "
                f"{oldest}. Re-read your state and reconnect without Last-Event-ID",
                path="$.lastEventId",
                details={"oldestId": oldest},
            )
    return EventsOpened(workspace=ctx.actor.workspace, after=after, oldest_id=oldest)


# -- webhook views -------------------------------------------------------------------------


def _view(tx: Transaction, record: EndpointRecord) -> EndpointView:
    return EndpointView.of(
        record,
        webhooks.patterns_of(record),
        tx.webhooks.delivery_counts(record.endpoint_id),
    )


def _live_endpoint(tx: Transaction, endpoint_id: str) -> EndpointRecord:
    record = tx.webhooks.get_endpoint(endpoint_id)
    if record is None or record.removed_at_ms is not None:
        raise TaskError(
            ErrorCode.NOT_FOUND, f"no webhook endpoint {endpoint_id}", path="$.endpoint_id"
        )
    return record


# -- operator acts -------------------------------------------------------------------------


def _add(ctx: CallContext, req: WebhookAddIn) -> WebhookAdded:
    tx = ctx.transaction()
    record = webhooks.add_endpoint(
        tx,
        endpoint_id=f"we_{secrets.token_hex(16)}",
        workspace=req.workspace,
        url=req.endpoint_url,
        events=req.events,
        secret=req.secret,
        allow_private=req.allow_private_targets,
        description=req.description,
        now_ms=ctx.now_ms,
    )
    return WebhookAdded(workspace=req.workspace, endpoint=_view(tx, record))


def _list(ctx: CallContext, req: WebhookListIn) -> WebhookList:
    tx = ctx.transaction()
    rows = tx.webhooks.endpoints(req.workspace, live_only=not req.removed)
    return WebhookList(endpoints=tuple(_view(tx, r) for r in rows))


def _remove(ctx: CallContext, req: WebhookRef) -> WebhookRemoved:
    tx = ctx.transaction()
    record = tx.webhooks.get_endpoint(req.endpoint_id)
    if record is None:
        raise TaskError(
            ErrorCode.NOT_FOUND, f"no webhook endpoint {req.endpoint_id}", path="$.endpoint_id"
        )
    was_live = tx.webhooks.remove_endpoint(req.endpoint_id, ctx.now_ms)
    return WebhookRemoved(
        workspace=record.workspace, endpoint_id=req.endpoint_id, was_live=was_live
    )


def _test(ctx: CallContext, req: WebhookRef) -> WebhookTestQueued:
    tx = ctx.transaction()
    record = _live_endpoint(tx, req.endpoint_id)
    delivery = webhooks.enqueue_test(tx, record, ctx.now_ms)
    return WebhookTestQueued(workspace=record.workspace, delivery=DeliveryView.of(delivery))


def _redeliver_any(ctx: CallContext, req: RedeliverIn) -> WebhookRedelivered:
    row = webhooks.redeliver(ctx.transaction(), req.seq, None, ctx.now_ms)
    return WebhookRedelivered(workspace=row.workspace, delivery=DeliveryView.of(row))


def _deliveries(ctx: CallContext, req: WebhookDeliveriesIn) -> WebhookDeliveryList:
    rows = ctx.transaction().webhooks.deliveries(
        None,
        endpoint_id=req.endpoint_id,
        status=req.status,
        limit=req.limit or OBSERVE_PAGE_DEFAULT,
    )
    return WebhookDeliveryList(deliveries=tuple(DeliveryView.of(r) for r in rows))


# -- the board's reads and its one act -----------------------------------------------------


def _observe(ctx: CallContext, req: WebhooksIn) -> WebhooksResult:
    tx = ctx.transaction()
    workspace = ctx.actor.workspace
    endpoints = tx.webhooks.endpoints(workspace, live_only=True)
    rows = tx.webhooks.deliveries(
        workspace,
        endpoint_id=req.endpoint_id,
        status=req.status,
        limit=req.limit or OBSERVE_PAGE_DEFAULT,
    )
    return WebhooksResult(
        endpoints=tuple(_view(tx, e) for e in endpoints),
        deliveries=tuple(DeliveryView.of(r) for r in rows),
    )


def _redeliver_own(ctx: CallContext, req: RedeliverIn) -> WebhookRedelivered:
    row = webhooks.redeliver(ctx.transaction(), req.seq, ctx.actor.workspace, ctx.now_ms)
    return WebhookRedelivered(workspace=row.workspace, delivery=DeliveryView.of(row))


_R, _W, _S = RiskClass.READ, RiskClass.WRITE, RiskClass.SENSITIVE

_OPERATOR: tuple[tuple[str, str, type[Any], type[Any], Callable[..., Any], RiskClass], ...] = (
    (
        "webhook_add",
        "Send a workspace's events matching the patterns to a URL, signed with a whsec_ secret.",
        WebhookAddIn,
        WebhookAdded,
        _add,
        _S,
    ),
    (
        "webhook_list",
        "List webhook endpoints (no secrets) with how their deliveries stand.",
        WebhookListIn,
        WebhookList,
        _list,
        _R,
    ),
    (
        "webhook_remove",
        "Remove a webhook endpoint; its waiting deliveries are dead.",
        WebhookRef,
        WebhookRemoved,
        _remove,
        _W,
    ),
    (
        "webhook_test",
        "Queue a webhook.test message to an endpoint.",
        WebhookRef,
        WebhookTestQueued,
        _test,
        _W,
    ),
    (
        "webhook_redeliver",
        "Queue a webhook delivery again (same webhook-id, a new 24-hour window).",
        RedeliverIn,
        WebhookRedelivered,
        _redeliver_any,
        _W,
    ),
    (
        "webhook_deliveries",
        "The newest webhook deliveries (of one endpoint, in one status), newest first.",
        WebhookDeliveriesIn,
        WebhookDeliveryList,
        _deliveries,
        _R,
    ),
)

WEBHOOK_OPERATOR_OPERATIONS: tuple[str, ...] = tuple("operator." + spec[0] for spec in _OPERATOR)
"""The operator's webhook acts (``agent-task admin webhook ...``)."""

EVENT_OPERATIONS: tuple[str, ...] = (
    "observe.events",
    "observe.webhooks",
    "admin.webhook.redeliver",
    *WEBHOOK_OPERATOR_OPERATIONS,
)
"""Every operation this module registers."""


def register(registry: Registry) -> None:
    """Register the event operations."""
    registry.register(
        Operation(
            name="observe.events",
            summary="Open the workspace's event stream (GET /v1/events); checks Last-Event-ID.",
            input_type=EventsIn,
            output_type=EventsOpened,
            min_tier=Tier.AGENT,
            risk=_R,
            idempotent=True,
            mcp=False,
            surface=Surface.ADMIN,
            handler=_events_open,
            doors=_NETWORK,
            description="Each event is one server-sent event: id (the event id), event (the "
            "operation) and data (task, status before and after, actor, time, error code). "
            "An admin token sees every event of its workspace; a member or agent token the "
            "events of its own calls and of the queue tasks it created.",
        )
    )
    registry.register(
        Operation(
            name="observe.webhooks",
            summary="The workspace's webhook endpoints (no secrets) and newest deliveries.",
            input_type=WebhooksIn,
            output_type=WebhooksResult,
            min_tier=Tier.ADMIN,
            risk=_R,
            idempotent=True,
            mcp=False,
            surface=Surface.ADMIN,
            handler=_observe,
            doors=_NETWORK,
        )
    )
    registry.register(
        Operation(
            name="admin.webhook.redeliver",
            summary="Queue one of the workspace's webhook deliveries again (same webhook-id).",
            input_type=RedeliverIn,
            output_type=WebhookRedelivered,
            min_tier=Tier.ADMIN,
            risk=_W,
            idempotent=False,
            mcp=False,
            surface=Surface.ADMIN,
            handler=_redeliver_own,
            doors=_NETWORK,
        )
    )
    for name, summary, input_type, output_type, handler, risk in _OPERATOR:
        registry.register(
            Operation(
                name="operator." + name,
                summary=summary,
                input_type=input_type,
                output_type=output_type,
                min_tier=Tier.ADMIN,
                risk=risk,
                idempotent=risk is _R,
                mcp=False,
                surface=Surface.OPERATOR,
                handler=handler,
                doors=_LOCAL,
                description="An operator act on the service host: reachable from 'agent-task "
                "admin webhook' and in process only, never over the network.",
            )
        )


def webhook_registry() -> Registry:
    """A registry of the operator's webhook acts alone (what ``admin webhook`` generates)."""
    full = Registry()
    register(full)
    registry = Registry()
    for name in WEBHOOK_OPERATOR_OPERATIONS:
        op = full.get(name)
        assert op is not None
        registry.register(op)
    return registry
