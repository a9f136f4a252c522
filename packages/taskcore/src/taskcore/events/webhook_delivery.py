"""Deliver webhook messages: the outbox worker (:mod:`taskcore.outbox`) over ``webhook_delivery``.

Each round first runs the fan-out (:func:`taskcore.events.webhooks.fan_out`: new events
become deliveries), then leases the due deliveries and sends each once:

* the endpoint's host is resolved now and every address checked
  (:mod:`taskcore.events.netguard`); the connection goes to an address that passed, with
  the URL's host in ``Host`` and in TLS's SNI and certificate check (no second lookup: a
  rebinding name reaches nothing new). A private address is ``private_address`` unless the
  endpoint was added with ``--allow-private-targets``;
* the request is signed afresh (:func:`taskcore.events.webhooks.sign`) with the time of
  sending; redirects are not followed; the answer's body is read (64 KiB at most) and
  dropped, and the whole exchange is bounded by one deadline;
* a 2xx is ``delivered``. Anything else (any other status, a timeout, an unreachable host)
  is retried after ``min(cap, base * 2**(attempts-1))`` (a 429's ``Retry-After`` honoured up
  to the cap) until the delivery's 24-hour window closes; then it is ``dead``, shown on the
  board and in ``agent-task admin webhook list``, and can be redelivered.

Errors are fixed categories (``http_500``, ``timeout``, ``unreachable``, ``private_address``),
never response text; the secret appears only in the signature. A delivery's final outcome
(delivered or dead) is one audit event of the platform actor ``webhook-delivery`` under no
workspace, so deliveries never become events that are delivered again.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import attrs

from taskcore.audit import write_event
from taskcore.canonical import canonical_json
from taskcore.clock import Clock, SystemClock
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import TaskError
from taskcore.events.log import Horizon
from taskcore.events.netguard import Resolver, Target, resolve_target
from taskcore.events.webhooks import fan_out, sign
from taskcore.limits import (
    WEBHOOK_BACKOFF_BASE_MS,
    WEBHOOK_BACKOFF_CAP_MS,
    WEBHOOK_REQUEST_TIMEOUT_SECONDS,
    WEBHOOK_RETRY_WINDOW_MS,
)
from taskcore.outbox import Attempt, BackoffPolicy, OutboxWorker, Sent
from taskcore.store.audit_api import AuditEvent
from taskcore.store.storage import Storage, Transaction
from taskcore.store.webhooks_api import DeliveryRecord

if TYPE_CHECKING:
    from taskcore.service import Service

__all__ = [
    "DELIVERY_ACTOR",
    "WEBHOOK_POLICY",
    "PinnedTransport",
    "WebhookDelivery",
    "WebhookReply",
    "WebhookRequest",
    "WebhookTransport",
    "start_webhook_delivery",
]

DELIVERY_ACTOR = "webhook-delivery"
"""The audit actor of a delivery's final outcome."""

WEBHOOK_POLICY = BackoffPolicy(
    base_ms=WEBHOOK_BACKOFF_BASE_MS,
    cap_ms=WEBHOOK_BACKOFF_CAP_MS,
    attempts_max=None,
    deadline_ms=WEBHOOK_RETRY_WINDOW_MS,
)
"""Retried with doubling delays (5 s ... 1 h) until the 24-hour window closes."""

_USER_AGENT = "agent-task-webhooks"
_BODY_READ_MAX = 65536


@attrs.frozen(kw_only=True)
class WebhookRequest:
    """One signed request to one vetted address. ``headers`` carry the signature."""

    target: Target
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __repr__(self) -> str:
        return f"WebhookRequest({self.target!r})"


@attrs.frozen(kw_only=True)
class WebhookReply:
    """A receiver's answer: its status and ``Retry-After`` if any."""

    status: int
    retry_after: str | None = None


class WebhookTransport(Protocol):
    """Sends a :class:`WebhookRequest`; raises ``OSError`` when the receiver is unreachable."""

    def send(self, request: WebhookRequest, timeout: float) -> WebhookReply:
        """POST the request to its vetted address; any status is a reply."""
        ...


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to a vetted address, whatever the host name resolves to now."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a vetted address; SNI and the certificate check use the URL's host."""

    def __init__(self, target: Target, timeout: float, context: ssl.SSLContext) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=context)
        self._address = target.address
        self._context = context

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)


class PinnedTransport:
    """The standard library's HTTP client, connecting to the vetted address only.

    ``timeout`` bounds the whole exchange: at the deadline a watchdog shuts the socket down
    (a receiver trickling its answer cannot hold the worker).
    """

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.context = context or ssl.create_default_context()

    def send(self, request: WebhookRequest, timeout: float) -> WebhookReply:
        """POST ``request``."""
        target = request.target
        conn: http.client.HTTPConnection = (
            _PinnedHTTPS(target, timeout, self.context)
            if target.parts.scheme == "https"
            else _PinnedHTTP(target, timeout)
        )
        fired = threading.Event()

        def cut() -> None:
            fired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(timeout, cut)
        watchdog.daemon = True
        watchdog.start()
        parts = target.parts
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request("POST", path, body=request.body, headers=dict(request.headers))
            response = conn.getresponse()
            response.read(_BODY_READ_MAX)
            status = int(response.status)
            retry_after = response.getheader("Retry-After") if status >= 400 else None
        except (OSError, http.client.HTTPException) as exc:
            if fired.is_set():
                raise TimeoutError(f"no answer within {timeout:g} s") from None
            if isinstance(exc, OSError):
                raise
            raise OSError(f"the answer is not HTTP: {type(exc).__name__}") from None
        finally:
            watchdog.cancel()
            conn.close()
        if fired.is_set():
            raise TimeoutError(f"no answer within {timeout:g} s")
        return WebhookReply(status=status, retry_after=retry_after)


def _retry_after_ms(value: str | None) -> int | None:
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip()) * 1000


class WebhookDelivery(OutboxWorker[DeliveryRecord]):
    """The webhook outbox worker; ``deliver_due`` is one round (fan-out, then deliveries)."""

    thread_name = "webhook-delivery"
    refused_status = None  # a receiver's 4xx is retried too (Standard Webhooks, Stripe, Svix)
    exhausted_status = "dead"

    def __init__(
        self,
        storage: Storage,
        *,
        horizon: Horizon | None = None,
        clock: Clock | None = None,
        transport: WebhookTransport | None = None,
        resolver: Resolver | None = None,
        policy: BackoffPolicy | None = None,
        lease_ms: int = 60_000,
        batch: int = 16,
        timeout_s: float = WEBHOOK_REQUEST_TIMEOUT_SECONDS,
        poll_ms: int = 1_000,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            storage,
            clock=clock or SystemClock(),
            policy=policy or WEBHOOK_POLICY,
            lease_ms=lease_ms,
            batch=batch,
            poll_ms=poll_ms,
        )
        self.horizon = horizon or Horizon(storage)
        self.transport: WebhookTransport = transport or PinnedTransport()
        self.resolver = resolver
        self.timeout_s = timeout_s
        self.wall_clock = wall_clock

    def before_round(self) -> None:
        """The fan-out: the events committed since the last round become deliveries."""
        fan_out(self.storage, self.horizon, self.clock.now_ms())

    def next_due(self, tx: Transaction) -> int | None:
        """The earliest next attempt of a queued delivery."""
        return tx.webhooks.next_due_at()

    def due(self, tx: Transaction, now_ms: int, limit: int) -> tuple[DeliveryRecord, ...]:
        """Queued deliveries due now."""
        return tx.webhooks.due(now_ms, limit)

    def hold(self, tx: Transaction, row: DeliveryRecord, until_ms: int, now_ms: int) -> None:
        """Lease a delivery while it is sent."""
        tx.webhooks.update_delivery(
            row.seq,
            status="queued",
            attempts=row.attempts,
            next_attempt_at_ms=until_ms,
            deadline_at_ms=row.deadline_at_ms,
            last_error=row.last_error,
            last_http_status=row.last_http_status,
            now_ms=now_ms,
        )

    def age_ms(self, row: DeliveryRecord, now_ms: int) -> int:
        """How far into its retry window the delivery is."""
        return now_ms - (row.deadline_at_ms - WEBHOOK_RETRY_WINDOW_MS)

    def send(self, row: DeliveryRecord) -> Sent:
        """One attempt: resolve and vet the host, sign, POST to the vetted address."""
        with self.storage.read() as tx:
            endpoint = tx.webhooks.get_endpoint(row.endpoint_id)
        if endpoint is None or endpoint.removed_at_ms is not None:
            return Sent(error="endpoint_removed")
        try:
            target = resolve_target(
                endpoint.url, allow_private=endpoint.allow_private, resolver=self.resolver
            )
        except TaskError as err:
            return Sent(error="private_address" if "private" in err.message else "unresolved")
        body = row.body.encode("utf-8")
        timestamp = int(self.wall_clock())
        headers = (
            ("Content-Type", "application/json"),
            ("User-Agent", _USER_AGENT),
            ("webhook-id", row.message_id),
            ("webhook-timestamp", str(timestamp)),
            ("webhook-signature", sign(endpoint.secret, row.message_id, timestamp, body)),
        )
        request = WebhookRequest(target=target, headers=headers, body=body)
        try:
            reply = self.transport.send(request, self.timeout_s)
        except TimeoutError:
            return Sent(error="timeout")
        except OSError as exc:
            reason = getattr(exc, "reason", None)
            return Sent(error="timeout" if isinstance(reason, TimeoutError) else "unreachable")
        if 200 <= reply.status < 300:
            return Sent(error=None, http_status=reply.status)
        return Sent(
            error=f"http_{reply.status}",
            http_status=reply.status,
            retry_after_ms=_retry_after_ms(reply.retry_after),
        )

    def outcome(self, row: DeliveryRecord, sent: Sent, now_ms: int) -> tuple[str, int]:
        """A removed endpoint's delivery is dead at once; otherwise the outbox's rule."""
        if sent.error == "endpoint_removed":
            return "dead", now_ms
        return super().outcome(row, sent, now_ms)

    def settle(
        self,
        tx: Transaction,
        row: DeliveryRecord,
        status: str,
        sent: Sent,
        next_at_ms: int,
        now_ms: int,
    ) -> str | None:
        """Record the attempt; a final outcome is one audit event (no workspace)."""
        current = tx.webhooks.get_delivery(row.seq)
        if current is None:
            return None
        final = "dead" if current.status == "dead" else status
        tx.webhooks.update_delivery(
            row.seq,
            status=final,
            attempts=row.attempts + 1,
            next_attempt_at_ms=next_at_ms,
            deadline_at_ms=current.deadline_at_ms,
            last_error=sent.error,
            last_http_status=sent.http_status,
            now_ms=now_ms,
        )
        if final in ("delivered", "dead"):
            write_event(
                tx,
                AuditEvent(
                    at_ms=now_ms,
                    actor=DELIVERY_ACTOR,
                    workspace="",
                    operation="webhook.delivery",
                    input_digest=domain_digest(
                        AUDIT_INPUT_DOMAIN,
                        canonical_json(
                            {
                                "seq": row.seq,
                                "endpoint_id": row.endpoint_id,
                                "message_id": row.message_id,
                            }
                        ),
                    ),
                    outcome="OK" if final == "delivered" else (sent.error or final),
                ),
            )
        return final

    def deliver_one(self, seq: int) -> Attempt | None:
        """Send delivery ``seq`` now if it is queued (``webhook test``); ``None`` if it is not.

        Leased like a round's rows, so a running worker leaves it alone meanwhile.
        """
        now = self.clock.now_ms()
        with self.storage.write() as tx:
            row = tx.webhooks.get_delivery(seq)
            if row is None or row.status != "queued":
                return None
            self.hold(tx, row, now + self.lease_ms, now)
        return self.record(row, self.send(row))

    def start(self, on_error: Callable[[TaskError], None] = lambda err: None) -> WebhookDelivery:
        """Run rounds in a daemon thread until :meth:`stop`."""
        super().start(on_error)
        return self


def start_webhook_delivery(
    service: Service,
    *,
    transport: WebhookTransport | None = None,
    policy: BackoffPolicy | None = None,
) -> WebhookDelivery:
    """Start the webhook worker on a service's journal, clock and event horizon.

    Idle (one cheap read a second) until an endpoint exists.
    """
    from taskcore.events.stream import hub_of

    return WebhookDelivery(
        service.storage,
        horizon=hub_of(service).horizon,
        clock=service.clock,
        transport=transport,
        policy=policy,
    ).start()
