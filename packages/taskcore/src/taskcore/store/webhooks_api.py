"""The webhook storage interface: endpoints, deliveries (the outbox) and the fan-out cursor.

Records and a Protocol only, no SQL. The domain is :mod:`taskcore.events.webhooks`:

* :class:`EndpointRecord`: where one workspace's events go (an operator act writes it). It
  holds the endpoint's signing secret itself: Standard Webhooks signs with HMAC-SHA256 keyed
  by the secret, so the service must be able to produce the key for every delivery; a hash
  would not do. The secret is never returned by a read (the views leave it out), never
  logged and never audited (the audit holds a digest of the act's input).
* :class:`DeliveryRecord`: one message for one endpoint, written by the fan-out (from the
  audit log, which is the event log) or by ``webhook test``, then delivered by the worker
  with retries (:mod:`taskcore.events.webhook_delivery`).
* the fan-out cursor: the last event id the fan-out has turned into deliveries.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = [
    "DELIVERY_STATUSES",
    "DeliveryRecord",
    "EndpointRecord",
    "WebhookStore",
]

DELIVERY_STATUSES = ("queued", "delivered", "dead")
"""``queued`` waits for (another) attempt at ``next_attempt_at_ms``; ``delivered`` got a 2xx;
``dead`` ran out of time (its ``deadline_at_ms`` passed) or lost its endpoint."""


@attrs.frozen(kw_only=True)
class EndpointRecord:
    """A webhook endpoint of one workspace.

    ``events`` is a JSON array of operation patterns (``agenttask.*``, ``*``). ``from_seq``
    is the newest event id when it was added: it receives the events after it.
    ``removed_at_ms`` is set when the operator removes it (its deliveries stay readable).
    """

    endpoint_id: str
    workspace: str
    url: str
    events: str
    secret: str
    allow_private: bool
    description: str
    from_seq: int
    created_at_ms: int
    removed_at_ms: int | None = None

    def __repr__(self) -> str:  # the secret never reaches a log through a repr
        return f"EndpointRecord({self.endpoint_id} {self.workspace} {self.url})"


@attrs.frozen(kw_only=True)
class DeliveryRecord:
    """One message to one endpoint, with its delivery bookkeeping.

    ``message_id`` is the ``webhook-id`` header: the event id for an event (stable across
    retries and redeliveries, for the receiver's de-duplication), ``test_<hex>`` for a test
    message. ``body`` is the exact JSON sent (each attempt signs it afresh with the time of
    sending). ``last_error`` is a short fixed category (``http_500``, ``unreachable``,
    ``private_address``, ``timeout``), never response text.
    """

    seq: int
    endpoint_id: str
    workspace: str
    message_id: str
    event_seq: int | None
    event_type: str
    body: str
    status: str
    attempts: int
    next_attempt_at_ms: int
    deadline_at_ms: int
    last_error: str | None
    last_http_status: int | None
    created_at_ms: int
    updated_at_ms: int


class WebhookStore(Protocol):
    """Webhook endpoints, deliveries and the fan-out cursor inside one transaction."""

    # -- endpoints ------------------------------------------------------------------------
    def put_endpoint(self, record: EndpointRecord) -> None:
        """Insert a new endpoint."""
        ...

    def get_endpoint(self, endpoint_id: str) -> EndpointRecord | None:
        """One endpoint (removed ones too), or ``None``."""
        ...

    def endpoints(self, workspace: str | None, *, live_only: bool) -> tuple[EndpointRecord, ...]:
        """Endpoints of one workspace (``None``: all), oldest first."""
        ...

    def remove_endpoint(self, endpoint_id: str, now_ms: int) -> bool:
        """Mark an endpoint removed and its queued deliveries dead; whether it was live."""
        ...

    # -- deliveries (the outbox) ----------------------------------------------------------
    def enqueue(self, record: DeliveryRecord) -> int | None:
        """Insert a delivery (``seq`` assigned); ``None`` if the endpoint has this message."""
        ...

    def get_delivery(self, seq: int) -> DeliveryRecord | None:
        """One delivery, or ``None``."""
        ...

    def due(self, now_ms: int, limit: int) -> tuple[DeliveryRecord, ...]:
        """Queued deliveries whose next attempt is due, oldest first, at most ``limit``."""
        ...

    def next_due_at(self) -> int | None:
        """The earliest ``next_attempt_at_ms`` of a queued delivery, or ``None``."""
        ...

    def update_delivery(
        self,
        seq: int,
        *,
        status: str,
        attempts: int,
        next_attempt_at_ms: int,
        deadline_at_ms: int,
        last_error: str | None,
        last_http_status: int | None,
        now_ms: int,
    ) -> None:
        """Record an attempt's outcome (or a lease while the delivery is being sent)."""
        ...

    def deliveries(
        self,
        workspace: str | None,
        *,
        endpoint_id: str | None,
        status: str | None,
        limit: int,
    ) -> tuple[DeliveryRecord, ...]:
        """The newest deliveries (filtered), newest first, at most ``limit``."""
        ...

    def delivery_counts(self, endpoint_id: str) -> dict[str, int]:
        """How many deliveries of the endpoint are in each status."""
        ...

    # -- the fan-out cursor ---------------------------------------------------------------
    def cursor(self) -> int | None:
        """The last event id the fan-out handled (``None`` before its first round)."""
        ...

    def move_cursor(self, before: int | None, after: int, now_ms: int) -> bool:
        """Move the cursor from ``before`` to ``after``; ``False`` if it was not ``before``."""
        ...
