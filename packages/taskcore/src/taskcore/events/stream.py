"""``GET /v1/events``: the event log as server-sent events, for one token.

Opening a stream is a call (``observe.events``: authenticated, tier-checked, audited once,
its filters decoded strictly); what follows is reading, not calling, so a stream's reads
write nothing (a stream that audited its reads would feed itself). Each event is one SSE
message::

    id: 1234
    event: agenttask.checkpoint
    data: {"id":1234,"operation":"agenttask.checkpoint","taskId":"at_...",...}

* **order and resumption**: events are sent in id order up to the log's :class:`Horizon`
  (never past an id below which an event may still commit), so a client that reconnects
  with ``Last-Event-ID: N`` (to any replica) gets exactly the events after ``N``: none
  lost, none twice. ``N`` older than what retention keeps is ``EVENTS_EXPIRED`` (HTTP 410)
  naming the oldest id still held; the client starts over from its own state;
* **scope**: the token's workspace, and what its tier may read (:func:`visible`), then the
  stream's filters (operation patterns, one task);
* **bounds**: :data:`~taskcore.limits.EVENTS_STREAMS_PER_TOKEN` streams per token
  (``RATE_LIMITED``), :data:`~taskcore.limits.EVENTS_STREAMS_MAX` per server
  (``OVERLOADED``); a stream reads at most :data:`~taskcore.limits.EVENTS_BATCH_MAX`
  events before they are written, and the next batch only once the transport took the last
  (a slow reader holds one batch, never a backlog); the adapter closes a stream whose reader
  stops taking data (:data:`~taskcore.limits.EVENTS_WRITE_TIMEOUT_SECONDS`);
* **wake-ups**: a stream with nothing to send waits on the storage's wake-ups
  (:mod:`taskcore.store.wakeup`, ``JOURNAL_TOPIC``: every committed write transaction, of this
  process or of another replica), and looks again at least every
  :data:`~taskcore.limits.EVENTS_POLL_MS`;
* **liveness**: a comment every :data:`~taskcore.limits.EVENTS_HEARTBEAT_SECONDS` when
  there is nothing to send, and the token checked again as often (a revoked token's stream
  ends).

:func:`open_events` opens a stream; :func:`event_frames` is the transport-neutral loop that
yields the bytes to write (the HTTP endpoint, the board and MCP's listener all use it).
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from taskcore.actors import Actor, RiskClass
from taskcore.audit import input_digest
from taskcore.codec import dumps
from taskcore.errors import ErrorCode, TaskError
from taskcore.events.log import Horizon, event_data, matches, visible
from taskcore.limits import (
    EVENTS_BATCH_MAX,
    EVENTS_HEARTBEAT_SECONDS,
    EVENTS_POLL_MS,
    EVENTS_STREAMS_MAX,
    EVENTS_STREAMS_PER_TOKEN,
    RETRY_AFTER_OVERLOADED_SECONDS,
)
from taskcore.registry import Door
from taskcore.store.audit_api import AuditEvent
from taskcore.store.wakeup import JOURNAL_TOPIC

if TYPE_CHECKING:
    from taskcore.service import Service

__all__ = [
    "EVENTS_OPERATION",
    "EventHub",
    "EventStream",
    "StreamSlots",
    "event_batches",
    "event_frames",
    "hub_of",
    "open_events",
]

EVENTS_OPERATION = "observe.events"
"""The operation a stream's opening is (audited once per stream)."""

T = TypeVar("T")
Run = Callable[[Callable[[], T]], Awaitable[T]]
"""How the async loop runs a blocking read: the adapter's worker threads."""

_CREATORS_MAX = 1024
_SCAN_MAX = 10 * EVENTS_BATCH_MAX


class StreamSlots:
    """Open streams, bounded per token and per server."""

    def __init__(self, per_token: int, total: int) -> None:
        self.per_token = per_token
        self.total = total
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}
        self._count = 0

    @property
    def count(self) -> int:
        """Streams open now."""
        return self._count

    def acquire(self, token_id: str) -> None:
        """Take one slot for ``token_id`` (``RATE_LIMITED`` / ``OVERLOADED`` when full)."""
        with self._lock:
            mine = self._open.get(token_id, 0)
            if mine >= self.per_token:
                raise TaskError(
                    ErrorCode.RATE_LIMITED,
                    f"this token has {mine} event streams open (at most {self.per_token}); "
                    "close one (or resume with Last-Event-ID after it closed)",
                    retry_after=EVENTS_HEARTBEAT_SECONDS,
                )
            if self._count >= self.total:
                raise TaskError(
                    ErrorCode.OVERLOADED,
                    f"the server holds {self._count} event streams (at most {self.total}); "
                    "retry shortly",
                    retry_after=RETRY_AFTER_OVERLOADED_SECONDS,
                )
            self._open[token_id] = mine + 1
            self._count += 1

    def release(self, token_id: str) -> None:
        """Give back a slot :meth:`acquire` took."""
        with self._lock:
            left = self._open[token_id] - 1
            if left:
                self._open[token_id] = left
            else:
                del self._open[token_id]
            self._count -= 1


@attrs.define
class EventHub:
    """What the streams of one service share: the horizon, the slots, the timings."""

    horizon: Horizon
    slots: StreamSlots
    heartbeat_s: float = EVENTS_HEARTBEAT_SECONDS
    poll_s: float = EVENTS_POLL_MS / 1000
    streams: weakref.WeakSet[EventStream] = attrs.field(factory=weakref.WeakSet)
    """The streams open now (their positions; what /metrics or a test may look at)."""


_HUBS: weakref.WeakKeyDictionary[Service, EventHub] = weakref.WeakKeyDictionary()
_HUBS_LOCK = threading.Lock()


def hub_of(service: Service) -> EventHub:
    """The event hub of ``service`` (made on first use)."""
    hub = _HUBS.get(service)
    if hub is None:
        with _HUBS_LOCK:
            hub = _HUBS.get(service)
            if hub is None:
                hub = EventHub(
                    horizon=Horizon(service.storage),
                    slots=StreamSlots(EVENTS_STREAMS_PER_TOKEN, EVENTS_STREAMS_MAX),
                )
                _HUBS[service] = hub
    return hub


class EventStream:
    """One open stream: its reader, its position, its filters (see the module docstring)."""

    def __init__(
        self,
        service: Service,
        hub: EventHub,
        actor: Actor,
        bearer: str | None,
        *,
        after: int,
        operations: tuple[str, ...],
        task_ids: frozenset[str] | None,
        own_reads: bool = True,
        typed: bool = True,
    ) -> None:
        self.service = service
        self.own_reads = own_reads
        self.typed = typed
        self.hub = hub
        self.actor = actor
        self.bearer = bearer
        self.position = after
        self.operations = operations
        self.task_ids = task_ids
        self._creators: OrderedDict[str, str | None] = OrderedDict()

    def _creator_of(self, task_id: str) -> str | None:
        if task_id in self._creators:
            self._creators.move_to_end(task_id)
            return self._creators[task_id]
        with self.service.storage.read() as tx:
            task = tx.queue.get_task(self.actor.workspace, task_id)
        creator = None if task is None else task.created_by
        self._creators[task_id] = creator
        if len(self._creators) > _CREATORS_MAX:
            self._creators.popitem(last=False)
        return creator

    def _wanted(self, event: AuditEvent) -> bool:
        if self.task_ids is not None and event.subject not in self.task_ids:
            return False
        if not matches(self.operations, event.operation):
            return False
        if not self.own_reads and event.actor == self.actor.token_id:
            op = self.service.registry.get(event.operation)
            if op is not None and op.risk is RiskClass.READ:
                return False
        return visible(event, self.actor, self._creator_of)

    def next_batch(self) -> list[AuditEvent]:
        """The next events this stream may send (at most a batch); blocking, in a thread.

        Reads past events it may not send (other tokens', filtered out) up to
        ``10 x`` a batch per call, so a quiet stream of a busy workspace stays cheap.
        """
        settled = self.hub.horizon.advance()
        if settled is None or settled <= self.position:
            return []
        out: list[AuditEvent] = []
        scanned = 0
        while len(out) < EVENTS_BATCH_MAX and scanned < _SCAN_MAX and self.position < settled:
            with self.service.storage.read() as tx:
                rows = tx.audit.after(
                    self.position,
                    up_to=settled,
                    limit=EVENTS_BATCH_MAX,
                    workspace=self.actor.workspace,
                )
            if not rows:
                self.position = settled
                break
            for event in rows:
                scanned += 1
                self.position = event.seq
                if self._wanted(event):
                    out.append(event)
                    if len(out) >= EVENTS_BATCH_MAX:
                        break
            if len(rows) < EVENTS_BATCH_MAX and len(out) < EVENTS_BATCH_MAX:
                self.position = max(self.position, settled)
                break
        return out

    def check(self) -> None:
        """Raise the token's refusal if it no longer authenticates (revoked meanwhile)."""
        if self.bearer is not None:
            self.service.authenticate(self.bearer)
            return
        with self.service.storage.read() as tx:
            record = tx.tokens.get(self.actor.token_id)
        if record is not None and record.revoked_at_ms is not None:
            raise TaskError(ErrorCode.TOKEN_REVOKED, "the bearer token was revoked")

    def frame(self, event: AuditEvent) -> bytes:
        """One SSE message: ``id``, ``event`` (the operation) and ``data`` (one JSON line).

        An untyped stream leaves ``event`` out (a browser's ``onmessage`` then sees all).
        """
        kind = b"\nevent: " + event.operation.encode("utf-8") if self.typed else b""
        return (
            b"id: "
            + str(event.seq).encode()
            + kind
            + b"\ndata: "
            + dumps(event_data(event))
            + b"\n\n"
        )


def _query(
    last_event_id: int | None, operations: tuple[str, ...], task_id: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if last_event_id is not None:
        body["lastEventId"] = last_event_id
    if operations:
        body["operations"] = list(operations)
    if task_id is not None:
        body["taskId"] = task_id
    return body


@contextmanager
def open_events(
    service: Service,
    bearer: str | Actor | None,
    *,
    last_event_id: int | None = None,
    operations: tuple[str, ...] = (),
    task_id: str | None = None,
    door: Door = Door.HTTP,
    client: str | None = None,
    traceparent: str | None = None,
    own_reads: bool = True,
    typed: bool = True,
) -> Iterator[EventStream]:
    """Open a stream for ``bearer`` (one audited ``observe.events`` call); hold its slot.

    Refusals are :class:`TaskError`, each audited once: the token's (401, 429 from its
    rate), the tier's, the filters' (400, 422), ``EVENTS_EXPIRED`` (410), a token or server
    with every stream slot taken (429, 503). ``client`` is the peer address (the refusal
    budget of failed authentications, as for every network request). ``own_reads=False``
    leaves out the token's own reads (the board's page loads: not news to the board);
    ``typed=False`` leaves out each message's ``event`` line. ``bearer`` may be an actor a
    door already authenticated (MCP's); its stream then re-checks the token's record.
    """
    hub = hub_of(service)
    body = _query(last_event_id, operations, task_id)
    if isinstance(bearer, Actor):
        actor = bearer
        try:
            hub.slots.acquire(actor.token_id)
        except TaskError as err:
            service.audit.refusal(
                actor.token_id, actor.workspace, EVENTS_OPERATION, input_digest(body), err
            )
            raise
    else:
        actor = service.admit(bearer, EVENTS_OPERATION, client=client, door=door)
        try:
            hub.slots.acquire(actor.token_id)
        except TaskError as err:
            raise service.refuse(bearer, EVENTS_OPERATION, err, body) from None
    try:
        if isinstance(bearer, Actor):
            response = service.dispatch(
                actor, EVENTS_OPERATION, body, door=door, traceparent=traceparent
            )
        else:
            response = service.call(
                bearer, EVENTS_OPERATION, body, door=door, admitted=actor, traceparent=traceparent
            )
        opened = response.json()
        stream = EventStream(
            service,
            hub,
            actor,
            None if isinstance(bearer, Actor) else bearer,
            after=int(opened["after"]),
            operations=operations,
            task_ids=None if task_id is None else frozenset({task_id}),
            own_reads=own_reads,
            typed=typed,
        )
        hub.streams.add(stream)
        try:
            yield stream
        finally:
            hub.streams.discard(stream)
    finally:
        hub.slots.release(actor.token_id)


async def event_batches(
    stream: EventStream, run: Run[Any]
) -> AsyncGenerator[list[AuditEvent], None]:
    """The events of a stream as they come, in batches; an empty batch is a heartbeat.

    What :func:`event_frames` (SSE) and MCP's ``subscriptions/listen`` are built on: reads
    only after the last batch was taken, waits on the storage's wake-ups, re-checks the token
    every heartbeat (raising its :class:`TaskError` when it lapsed).
    """
    hub = stream.hub
    wakeup = stream.service.storage.wakeup
    # Registered before the first look, woken by every commit after it (this process's,
    # and another replica's through the storage's LISTEN / data_version watch).
    waiter = wakeup.waiter(JOURNAL_TOPIC, since=wakeup.generation(JOURNAL_TOPIC))
    try:
        last_sent = last_check = time.monotonic()
        while True:
            batch = await run(stream.next_batch)
            now = time.monotonic()
            if batch:
                yield batch
                last_sent = now
                continue
            if now - last_check >= hub.heartbeat_s:
                await run(stream.check)
                last_check = now
            if now - last_sent >= hub.heartbeat_s:
                yield []
                last_sent = now
            await waiter.wait(min(hub.poll_s, max(0.0, hub.heartbeat_s - (now - last_sent))))
    finally:
        waiter.close()


async def event_frames(
    stream: EventStream, run: Run[Any], *, retry_ms: int = 3000
) -> AsyncGenerator[bytes, None]:
    """The bytes of a stream, forever: batches of events, heartbeats when there are none.

    ``run`` runs a blocking read off the event loop. The consumer writes each chunk before
    asking for the next one, which is what bounds a slow reader (the loop reads the next
    batch only after the last was taken). Ends by raising the token's :class:`TaskError`
    when it stops authenticating.
    """
    yield f"retry: {retry_ms}\n\n".encode()
    async with contextlib.aclosing(event_batches(stream, run)) as batches:
        async for batch in batches:
            yield b"".join(stream.frame(e) for e in batch) if batch else b": keepalive\n\n"
