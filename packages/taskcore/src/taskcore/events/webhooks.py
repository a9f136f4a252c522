"""Webhooks: a workspace's events POSTed to its endpoints, signed as Standard Webhooks sign.

An operator adds an endpoint for a workspace (``agent-task admin webhook add --url URL
--events PATTERN... --secret-file F``): a URL, the operation patterns it wants
(``agenttask.*``, ``agenttask.checkpoint``, ``*``) and a ``whsec_`` secret. From then on
every event of that workspace whose operation matches becomes a delivery: the fan-out
(:func:`fan_out`) reads the event log (the audit table, up to its :class:`Horizon`) after its
cursor and writes one delivery row per matching endpoint, moving the cursor in the same
transaction; the delivery worker (:mod:`taskcore.events.webhook_delivery`) sends them, at
least once, retried with back-off for 24 hours, then marks them dead.

A request (https://www.standardwebhooks.com/, the scheme of Svix and OpenAI's webhooks)::

    POST <url>
    content-type: application/json
    webhook-id: 1234                   the event id: the same on every retry (de-duplicate)
    webhook-timestamp: 1735689600      seconds, at sending
    webhook-signature: v1,<base64>     HMAC-SHA256 of "<id>.<timestamp>.<body>", keyed by the
                                       secret's bytes (base64 after "whsec_")

    {"type": "agenttask.checkpoint", "timestamp": "2025-01-01T00:00:00.000Z",
     "data": {...the event's data, as GET /v1/events sends it...}}

The secret is stored in the journal with the endpoint (the HMAC needs the key itself, so a
hash cannot sign; see :mod:`taskcore.store.webhooks_api`); it is never returned by a read,
never logged, and the audit event of the act that added it holds only a digest of the act's
input. ``agent-task admin webhook add`` writes a new secret to ``F`` (mode 0600) when ``F``
does not exist, or uses the one in it.

>>> secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
>>> sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.events.log import Horizon, event_data, iso_ms, matches
from taskcore.events.netguard import Resolver, resolve_target
from taskcore.limits import (
    WEBHOOK_ENDPOINTS_MAX,
    WEBHOOK_FANOUT_BATCH,
    WEBHOOK_RETRY_WINDOW_MS,
    WEBHOOK_SECRET_BYTES,
)
from taskcore.store.audit_api import AuditEvent
from taskcore.store.storage import Storage, Transaction
from taskcore.store.webhooks_api import DeliveryRecord, EndpointRecord

__all__ = [
    "SECRET_PREFIX",
    "TEST_EVENT",
    "add_endpoint",
    "delivery_body",
    "enqueue_test",
    "fan_out",
    "new_secret",
    "redeliver",
    "secret_for_file",
    "sign",
]

SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret
"""Standard Webhooks' secret prefix; the rest is the key's bytes in base64."""

TEST_EVENT = "webhook.test"
"""The type of the message ``agent-task admin webhook test`` sends."""

_SECRET_FILE_MAX = 4096


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` + base64 of :data:`WEBHOOK_SECRET_BYTES` random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(WEBHOOK_SECRET_BYTES)).decode()


def _key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret (``INVALID_VALUE`` for anything else)."""
    body = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not secret.startswith(SECRET_PREFIX) or not 24 <= len(key) <= 64:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "a webhook secret is 'whsec_' followed by base64 of 24 to 64 random bytes",
            path="$.secret",
        )
    return key


def check_secret(secret: str) -> str:
    """Return ``secret`` if it is a usable ``whsec_`` secret (else ``INVALID_VALUE``)."""
    _key(secret)
    return secret


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value (``v1,<base64 HMAC-SHA256>``) of one request."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def secret_for_file(path: Path | str) -> tuple[str, bool]:
    """The secret in ``path``, or a new one written there; ``(secret, created)``.

    A missing file gets a new secret, created exclusively with mode 0600 (an existing file
    is never overwritten). An existing file must hold one ``whsec_`` secret and be readable
    by its owner only (``INVALID_PATH`` otherwise).
    """
    target = Path(path)
    secret = new_secret()
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_secret(target), False
    except OSError as exc:
        raise TaskError(
            ErrorCode.INVALID_PATH, f"cannot create the secret file ({exc.strerror})"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(secret + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return secret, True


def _read_secret(path: Path) -> str:
    try:
        if path.stat().st_mode & 0o077:
            raise TaskError(
                ErrorCode.INVALID_PATH,
                "the secret file is readable by others; chmod 600 it (or name a new file)",
            )
        text = path.read_text(encoding="utf-8")[:_SECRET_FILE_MAX].strip()
    except (OSError, UnicodeDecodeError):
        raise TaskError(ErrorCode.INVALID_PATH, "cannot read the secret file") from None
    try:
        return check_secret(text)
    except TaskError:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "the secret file must hold one whsec_ secret (delete it to have one made)",
        ) from None


# -- endpoints ------------------------------------------------------------------------------


def add_endpoint(
    tx: Transaction,
    *,
    endpoint_id: str,
    workspace: str,
    url: str,
    events: tuple[str, ...],
    secret: str,
    allow_private: bool,
    description: str,
    now_ms: int,
    resolver: Resolver | None = None,
) -> EndpointRecord:
    """Check and store a new endpoint; it receives the events committed after this one.

    The URL must resolve to public addresses unless ``allow_private``
    (:func:`taskcore.events.netguard.resolve_target`); a workspace has at most
    :data:`WEBHOOK_ENDPOINTS_MAX` live endpoints.
    """
    check_secret(secret)
    resolve_target(url, allow_private=allow_private, resolver=resolver)
    if len(tx.webhooks.endpoints(workspace, live_only=True)) >= WEBHOOK_ENDPOINTS_MAX:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            f"workspace {workspace!r} has {WEBHOOK_ENDPOINTS_MAX} webhook endpoints; remove one",
        )
    record = EndpointRecord(
        endpoint_id=endpoint_id,
        workspace=workspace,
        url=url,
        events=json.dumps(list(events)),
        secret=secret,
        allow_private=allow_private,
        description=description,
        from_seq=tx.audit.newest_seq(),
        created_at_ms=now_ms,
    )
    tx.webhooks.put_endpoint(record)
    return record


def patterns_of(endpoint: EndpointRecord) -> tuple[str, ...]:
    """The operation patterns an endpoint subscribed to."""
    return tuple(json.loads(endpoint.events))


def delivery_body(event_type: str, at_ms: int, data: dict[str, Any]) -> str:
    """The JSON body of a webhook request (Standard Webhooks' ``type``/``timestamp``/``data``)."""
    return json.dumps(
        {"type": event_type, "timestamp": iso_ms(at_ms), "data": data},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _delivery(
    endpoint: EndpointRecord,
    *,
    message_id: str,
    event_seq: int | None,
    event_type: str,
    body: str,
    now_ms: int,
) -> DeliveryRecord:
    return DeliveryRecord(
        seq=0,
        endpoint_id=endpoint.endpoint_id,
        workspace=endpoint.workspace,
        message_id=message_id,
        event_seq=event_seq,
        event_type=event_type,
        body=body,
        status="queued",
        attempts=0,
        next_attempt_at_ms=now_ms,
        deadline_at_ms=now_ms + WEBHOOK_RETRY_WINDOW_MS,
        last_error=None,
        last_http_status=None,
        created_at_ms=now_ms,
        updated_at_ms=now_ms,
    )


def enqueue_test(tx: Transaction, endpoint: EndpointRecord, now_ms: int) -> DeliveryRecord:
    """Queue a ``webhook.test`` message to ``endpoint`` (id ``test_<hex>``); return it."""
    message_id = f"test_{secrets.token_hex(12)}"
    body = delivery_body(
        TEST_EVENT,
        now_ms,
        {"endpointId": endpoint.endpoint_id, "workspace": endpoint.workspace},
    )
    record = _delivery(
        endpoint,
        message_id=message_id,
        event_seq=None,
        event_type=TEST_EVENT,
        body=body,
        now_ms=now_ms,
    )
    seq = tx.webhooks.enqueue(record)
    if seq is None:
        raise TaskError(ErrorCode.CONFLICT, "a test message id repeated; retry")
    return attrs.evolve(record, seq=seq)


def redeliver(tx: Transaction, seq: int, workspace: str | None, now_ms: int) -> DeliveryRecord:
    """Queue delivery ``seq`` again now (same id and body), with a new 24-hour window.

    ``workspace`` confines it to one workspace's deliveries (``None``: the operator's, any).
    A delivery still waiting, or of a removed endpoint, is refused (``CONFLICT``).
    """
    row = tx.webhooks.get_delivery(seq)
    if row is None or (workspace is not None and row.workspace != workspace):
        raise TaskError(ErrorCode.NOT_FOUND, f"no webhook delivery {seq} here", path="$.seq")
    endpoint = tx.webhooks.get_endpoint(row.endpoint_id)
    if endpoint is None or endpoint.removed_at_ms is not None:
        raise TaskError(ErrorCode.CONFLICT, "its endpoint was removed; nothing to send it to")
    if row.status == "queued":
        raise TaskError(ErrorCode.CONFLICT, "it is still queued; it will be sent")
    tx.webhooks.update_delivery(
        seq,
        status="queued",
        attempts=row.attempts,
        next_attempt_at_ms=now_ms,
        deadline_at_ms=now_ms + WEBHOOK_RETRY_WINDOW_MS,
        last_error=row.last_error,
        last_http_status=row.last_http_status,
        now_ms=now_ms,
    )
    return attrs.evolve(row, status="queued", next_attempt_at_ms=now_ms)


# -- the fan-out --------------------------------------------------------------------------


def _matching(endpoints: tuple[EndpointRecord, ...], event: AuditEvent) -> list[EndpointRecord]:
    return [
        e
        for e in endpoints
        if e.workspace == event.workspace
        and event.seq > e.from_seq
        and matches(patterns_of(e), event.operation)
    ]


def fan_out(storage: Storage, horizon: Horizon, now_ms: int) -> int:
    """Turn the events committed since the cursor into deliveries; return how many.

    One write transaction per batch: the events after the cursor up to the horizon, one
    delivery per matching live endpoint (an endpoint that has the message already is left
    alone), and the cursor moved past them, compare-and-set, so two replicas fanning out at
    once write each delivery once. Events of no workspace (platform acts) go nowhere.
    """
    settled = horizon.advance()
    if settled is None:
        return 0
    written = 0
    while True:
        with storage.write() as tx:
            cursor = tx.webhooks.cursor()
            endpoints = tx.webhooks.endpoints(None, live_only=True)
            # The first round starts where the oldest endpoint starts (or at the horizon).
            start = (
                min((e.from_seq for e in endpoints), default=settled) if cursor is None else cursor
            )
            if start >= settled:
                if cursor is None:
                    tx.webhooks.move_cursor(None, settled, now_ms)
                return written
            events = tx.audit.after(start, up_to=settled, limit=WEBHOOK_FANOUT_BATCH)
            end = events[-1].seq if len(events) == WEBHOOK_FANOUT_BATCH else settled
            for event in events:
                if not event.workspace:
                    continue
                for endpoint in _matching(endpoints, event):
                    body = delivery_body(event.operation, event.at_ms, event_data(event))
                    record = _delivery(
                        endpoint,
                        message_id=str(event.seq),
                        event_seq=event.seq,
                        event_type=event.operation,
                        body=body,
                        now_ms=now_ms,
                    )
                    if tx.webhooks.enqueue(record) is not None:
                        written += 1
            if not tx.webhooks.move_cursor(cursor, end, now_ms):
                return written  # another replica moved it: its round wrote these
        if end >= settled:
            return written
