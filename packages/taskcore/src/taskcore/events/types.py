"""The wire types of the event operations: stream opening, webhook acts and views.

Operator inputs (``operator.webhook_*``) are spelled in snake case like every operator act;
the views and the inputs of network doors (``observe.events``, ``observe.webhooks``,
``admin.webhook.redeliver``) in camel case like the other reads. No view holds a secret.

>>> from taskcore.codec import decode
>>> decode(EventsIn, b'{"operations": ["agenttask.*"], "taskId": "at_1"}').operations
('agenttask.*',)
"""

from __future__ import annotations

from typing import Literal

import attrs

from taskcore.codec import wire_field
from taskcore.events.log import PATTERN
from taskcore.limits import (
    EVENTS_FILTERS_MAX,
    OBSERVE_PAGE_MAX,
    WEBHOOK_DESCRIPTION_MAX_CHARS,
    WEBHOOK_URL_MAX_CHARS,
)
from taskcore.store.webhooks_api import DeliveryRecord, EndpointRecord

__all__ = [
    "ENDPOINT_ID_PATTERN",
    "DeliveryView",
    "EndpointView",
    "EventsIn",
    "EventsOpened",
    "RedeliverIn",
    "WebhookAddIn",
    "WebhookAdded",
    "WebhookDeliveriesIn",
    "WebhookDeliveryList",
    "WebhookList",
    "WebhookListIn",
    "WebhookRedelivered",
    "WebhookRef",
    "WebhookRemoved",
    "WebhookTestQueued",
    "WebhooksIn",
    "WebhooksResult",
]

ENDPOINT_ID_PATTERN = r"we_[0-9a-f]{32}"
_ID = r"[A-Za-z0-9._-]{1,128}"
_TASK_ID = r"[A-Za-z0-9_.:-]{1,128}"
_TEXT = r"[^\x00-\x1f\x7f]*"


@attrs.frozen(kw_only=True)
class EventsIn:
    """``observe.events``: open a stream of the workspace's events (``GET /v1/events``)."""

    last_event_id: int | None = wire_field(
        default=None,
        wire="lastEventId",
        doc="resume after this event id (the SSE Last-Event-ID); absent: from now on",
    )
    operations: tuple[str, ...] = wire_field(
        default=(),
        max_len=EVENTS_FILTERS_MAX,
        item_pattern=PATTERN,
        doc="only operations matching one of these patterns (agenttask.*)",
    )
    task_id: str | None = wire_field(
        default=None, wire="taskId", pattern=_TASK_ID, doc="only events about this task"
    )


@attrs.frozen(kw_only=True)
class EventsOpened:
    """Where a stream starts: after ``after`` (an event id), of ``workspace``."""

    workspace: str = wire_field()
    after: int = wire_field()
    oldest_id: int | None = wire_field(wire="oldestId")


@attrs.frozen(kw_only=True)
class WebhookAddIn:
    """``operator.webhook_add``: send a workspace's matching events to a URL, signed."""

    workspace: str = wire_field(pattern=_ID, doc="whose events")
    endpoint_url: str = wire_field(
        wire="url", min_len=8, max_len=WEBHOOK_URL_MAX_CHARS, doc="http(s) URL to POST to"
    )
    events: tuple[str, ...] = wire_field(
        min_len=1,
        max_len=EVENTS_FILTERS_MAX,
        item_pattern=PATTERN,
        doc="operation patterns (agenttask.*, agenttask.checkpoint, *)",
    )
    secret: str = wire_field(max_len=256, doc="the whsec_ signing secret")
    allow_private_targets: bool = wire_field(
        default=False, doc="allow a loopback, private or link-local address"
    )
    description: str = wire_field(
        default="", max_len=WEBHOOK_DESCRIPTION_MAX_CHARS, pattern=_TEXT, doc="a label"
    )

    def __repr__(self) -> str:  # the secret never reaches a log through a repr
        return f"WebhookAddIn({self.workspace} {self.endpoint_url})"


@attrs.frozen(kw_only=True)
class WebhookRef:
    """An endpoint by id (``operator.webhook_remove``, ``operator.webhook_test``)."""

    endpoint_id: str = wire_field(pattern=ENDPOINT_ID_PATTERN, doc="we_...")


@attrs.frozen(kw_only=True)
class WebhookListIn:
    """``operator.webhook_list``: endpoints (of one workspace), with delivery counts."""

    workspace: str | None = wire_field(default=None, pattern=_ID, doc="only this workspace's")
    removed: bool = wire_field(default=False, doc="list removed endpoints too")


@attrs.frozen(kw_only=True)
class RedeliverIn:
    """A delivery by its number (``operator.webhook_redeliver``, ``admin.webhook.redeliver``)."""

    seq: int = wire_field(lo=1, doc="the delivery's number")


@attrs.frozen(kw_only=True)
class WebhookDeliveriesIn:
    """``operator.webhook_deliveries``: the newest deliveries, filtered."""

    endpoint_id: str | None = wire_field(
        default=None, pattern=ENDPOINT_ID_PATTERN, doc="only this endpoint's"
    )
    status: Literal["queued", "delivered", "dead"] | None = wire_field(
        default=None, doc="only deliveries in this status"
    )
    limit: int | None = wire_field(default=None, lo=1, hi=OBSERVE_PAGE_MAX, doc="how many")


@attrs.frozen(kw_only=True)
class WebhooksIn:
    """``observe.webhooks``: the workspace's endpoints and newest deliveries."""

    endpoint_id: str | None = wire_field(
        default=None, wire="endpointId", pattern=ENDPOINT_ID_PATTERN
    )
    status: Literal["queued", "delivered", "dead"] | None = wire_field(default=None)
    limit: int | None = wire_field(default=None, lo=1, hi=OBSERVE_PAGE_MAX)


@attrs.frozen(kw_only=True)
class DeliveryView:
    """One delivery (no secret; the body is the event's public data)."""

    seq: int = wire_field()
    endpoint_id: str = wire_field(wire="endpointId")
    message_id: str = wire_field(wire="messageId")
    event_id: int | None = wire_field(wire="eventId")
    event_type: str = wire_field(wire="eventType")
    status: str = wire_field()
    attempts: int = wire_field()
    last_error: str | None = wire_field(wire="lastError")
    last_http_status: int | None = wire_field(wire="lastHttpStatus")
    next_attempt_at_ms: int = wire_field(wire="nextAttemptAtMs")
    deadline_at_ms: int = wire_field(wire="deadlineAtMs")
    created_at_ms: int = wire_field(wire="createdAtMs")
    updated_at_ms: int = wire_field(wire="updatedAtMs")

    @classmethod
    def of(cls, row: DeliveryRecord) -> DeliveryView:
        """The view of a stored delivery."""
        return cls(
            seq=row.seq,
            endpoint_id=row.endpoint_id,
            message_id=row.message_id,
            event_id=row.event_seq,
            event_type=row.event_type,
            status=row.status,
            attempts=row.attempts,
            last_error=row.last_error,
            last_http_status=row.last_http_status,
            next_attempt_at_ms=row.next_attempt_at_ms,
            deadline_at_ms=row.deadline_at_ms,
            created_at_ms=row.created_at_ms,
            updated_at_ms=row.updated_at_ms,
        )


@attrs.frozen(kw_only=True)
class EndpointView:
    """One endpoint, without its secret, with how its deliveries stand."""

    endpoint_id: str = wire_field(wire="endpointId")
    workspace: str = wire_field()
    url: str = wire_field()
    events: tuple[str, ...] = wire_field()
    allow_private_targets: bool = wire_field(wire="allowPrivateTargets")
    description: str = wire_field()
    created_at_ms: int = wire_field(wire="createdAtMs")
    removed_at_ms: int | None = wire_field(wire="removedAtMs")
    queued: int = wire_field()
    delivered: int = wire_field()
    dead: int = wire_field()

    @classmethod
    def of(
        cls, record: EndpointRecord, events: tuple[str, ...], counts: dict[str, int]
    ) -> EndpointView:
        """The view of a stored endpoint."""
        return cls(
            endpoint_id=record.endpoint_id,
            workspace=record.workspace,
            url=record.url,
            events=events,
            allow_private_targets=record.allow_private,
            description=record.description,
            created_at_ms=record.created_at_ms,
            removed_at_ms=record.removed_at_ms,
            queued=counts.get("queued", 0),
            delivered=counts.get("delivered", 0),
            dead=counts.get("dead", 0),
        )


@attrs.frozen(kw_only=True)
class WebhookAdded:
    """``operator.webhook_add``'s answer (the secret is not in it)."""

    workspace: str = wire_field()
    endpoint: EndpointView = wire_field()


@attrs.frozen(kw_only=True)
class WebhookList:
    """Endpoints, oldest first."""

    endpoints: tuple[EndpointView, ...] = wire_field()


@attrs.frozen(kw_only=True)
class WebhookRemoved:
    """``operator.webhook_remove``'s answer."""

    workspace: str = wire_field()
    endpoint_id: str = wire_field(wire="endpointId")
    was_live: bool = wire_field(wire="wasLive")


@attrs.frozen(kw_only=True)
class WebhookTestQueued:
    """``operator.webhook_test``'s answer: the test message queued for the endpoint."""

    workspace: str = wire_field()
    delivery: DeliveryView = wire_field()


@attrs.frozen(kw_only=True)
class WebhookRedelivered:
    """A delivery queued again."""

    workspace: str = wire_field()
    delivery: DeliveryView = wire_field()


@attrs.frozen(kw_only=True)
class WebhookDeliveryList:
    """Deliveries, newest first."""

    deliveries: tuple[DeliveryView, ...] = wire_field()


@attrs.frozen(kw_only=True)
class WebhooksResult:
    """``observe.webhooks``: the workspace's endpoints and its newest deliveries."""

    endpoints: tuple[EndpointView, ...] = wire_field()
    deliveries: tuple[DeliveryView, ...] = wire_field()
