"""Transport limits: slow clients, connection cap, request bytes in flight.

What only the transport can see is bounded here; every number comes from
:mod:`taskcore.limits` (and an ``agent-task serve`` flag), every refusal is a taskcore error
code. Four mechanisms:

* **Time to send a request.** uvicorn bounds only the idle time between kept-alive requests.
  :func:`guarded_protocol` returns a subclass of uvicorn's httptools protocol that closes a
  connection whose request headers have not all arrived within ``header_timeout`` seconds
  (counted from the connection, or from the first byte of a later request on a kept-alive
  one), or whose body has not all arrived within ``body_timeout`` seconds of its headers. An
  ASGI middleware cannot do this: the application is called only once the headers are in.
* **Header bytes.** A request target (the URL of the request line) longer than
  ``target_bytes`` (8 KiB) is answered 414 ``URI_TOO_LONG``; a request line and headers
  longer than ``header_bytes`` (16 KiB, the bound h11 kept before the server moved to
  httptools) 431 ``HEADERS_TOO_LARGE``. Either answer carries the ``{error, code}`` body and
  closes the connection; the application never sees the request.
* **Connections.** At most ``max_connections`` connections are served (lowered at start so
  that they fit the process's descriptor limit with room for the journal). At the cap, a new
  connection first closes the connection that has been sending its headers the longest, if
  that has taken more than ``evict_after`` seconds (a slow client, never a working one); if
  there is none, up to ``health_reserve`` more connections are accepted that may only ask
  for health (``GET /v1/hub/health`` and its aliases; anything else is 503 ``OVERLOADED``),
  and beyond those a connection
  is closed at once. So slow or idle connections can neither exhaust descriptors nor lock
  out a working client, and a supervisor can always ask for health.
* **Body bytes in flight.** :class:`BodyBudget` counts the request body bytes all requests
  hold together; a request that would take it over ``body_bytes_in_flight`` is refused (503
  ``OVERLOADED`` with ``Retry-After``) before its body is read when it declares its length,
  or the moment it passes when it streams. Bodies are read only after authentication
  (:meth:`taskcore.Service.admit`), so an unauthenticated request never holds any.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
from collections.abc import AsyncIterator, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import attrs
from starlette.types import ASGIApp, Receive, Scope, Send
from taskcore import ErrorCode, TaskError
from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    EVENTS_WRITE_TIMEOUT_SECONDS,
    HTTP_BODY_BYTES_IN_FLIGHT_MAX,
    HTTP_BODY_TIMEOUT_SECONDS,
    HTTP_CONNECTIONS_MAX,
    HTTP_FD_HEADROOM,
    HTTP_HEADER_EVICT_AFTER_SECONDS,
    HTTP_HEADER_MAX_BYTES,
    HTTP_HEADER_TIMEOUT_SECONDS,
    HTTP_HEALTH_RESERVED_CONNECTIONS,
    HTTP_KEEPALIVE_TIMEOUT_SECONDS,
    HTTP_REQUEST_TARGET_MAX_BYTES,
    RETRY_AFTER_OVERLOADED_SECONDS,
)
from taskmcp.family import error_response
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

if TYPE_CHECKING:
    from taskcore.hosting import HostSettings

__all__ = [
    "BodyBudget",
    "Reservation",
    "TransportLimits",
    "descriptor_limit",
    "guarded_protocol",
    "overloaded",
]

_MIN_CONNECTIONS = 8


def descriptor_limit() -> int | None:
    """The process's soft limit on open file descriptors, or ``None`` if unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _at_least_one_upload(_: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if value < COLLECTOR_ENVELOPE_MAX_BYTES:
        raise ValueError(
            f"{attribute.name} must be at least {COLLECTOR_ENVELOPE_MAX_BYTES} bytes (one "
            "collector upload), or no upload could ever be read"
        )


def _positive(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive")


@attrs.frozen(kw_only=True)
class TransportLimits:
    """The HTTP transport's limits (seconds, connections, bytes); defaults from taskcore.

    >>> TransportLimits().header_timeout
    10.0
    >>> TransportLimits(max_connections=10_000).connections(descriptors=256)
    96
    """

    header_timeout: float = attrs.field(
        default=float(HTTP_HEADER_TIMEOUT_SECONDS), converter=float, validator=_positive
    )
    body_timeout: float = attrs.field(
        default=float(HTTP_BODY_TIMEOUT_SECONDS), converter=float, validator=_positive
    )
    keepalive_timeout: float = attrs.field(
        default=float(HTTP_KEEPALIVE_TIMEOUT_SECONDS), converter=float, validator=_positive
    )
    max_connections: int = attrs.field(default=HTTP_CONNECTIONS_MAX, validator=_positive)
    health_reserve: int = HTTP_HEALTH_RESERVED_CONNECTIONS
    evict_after: float = attrs.field(
        default=HTTP_HEADER_EVICT_AFTER_SECONDS, converter=float, validator=_positive
    )
    body_bytes_in_flight: int = attrs.field(
        default=HTTP_BODY_BYTES_IN_FLIGHT_MAX, validator=_at_least_one_upload
    )
    header_bytes: int = attrs.field(default=HTTP_HEADER_MAX_BYTES, validator=_positive)
    target_bytes: int = attrs.field(default=HTTP_REQUEST_TARGET_MAX_BYTES, validator=_positive)
    events_write_timeout: float = attrs.field(
        default=float(EVENTS_WRITE_TIMEOUT_SECONDS), converter=float, validator=_positive
    )
    """How long an event stream's send may wait for a reader that stopped reading."""

    @classmethod
    def from_settings(cls, settings: HostSettings) -> TransportLimits:
        """The limits of a hosted service's settings (:mod:`taskcore.hosting`)."""
        return cls(
            header_timeout=settings.header_timeout,
            body_timeout=settings.body_timeout,
            keepalive_timeout=settings.keepalive_timeout,
            max_connections=settings.max_connections,
            body_bytes_in_flight=settings.max_body_bytes,
        )

    def connections(self, *, descriptors: int | None = None) -> int:
        """The connection cap in force.

        That is ``max_connections``, lowered to fit ``descriptors`` (default: the process's
        soft limit) minus room for the journal and threads.
        """
        limit = descriptor_limit() if descriptors is None else descriptors
        if limit is None:
            return self.max_connections
        return min(self.max_connections, max(_MIN_CONNECTIONS, limit - HTTP_FD_HEADROOM))


def overloaded(what: str) -> TaskError:
    """The ``OVERLOADED`` refusal (503, ``Retry-After``) naming what is exhausted."""
    return TaskError(
        ErrorCode.OVERLOADED,
        f"the server is holding as many {what} as it is configured to; retry shortly",
        retry_after=RETRY_AFTER_OVERLOADED_SECONDS,
    )


class BodyBudget:
    """Request body bytes held by all requests of one application, bounded.

    Used from the event loop only (the handlers reserve before they read), so it needs no
    lock.

    >>> budget = BodyBudget(10)
    >>> r = Reservation(budget)
    >>> r.need(8)
    >>> Reservation(budget).need(3)
    Traceback (most recent call last):
    taskcore.errors.TaskError: the server is holding as many request body bytes as it is configured to; retry shortly
    >>> r.release(); budget.used
    0
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def claim(self, n: int) -> None:
        """Take ``n`` more bytes, or refuse with ``OVERLOADED``."""
        if self.used + n > self.max_bytes:
            raise overloaded("request body bytes")
        self.used += n

    def free(self, n: int) -> None:
        """Give ``n`` bytes back."""
        self.used = max(0, self.used - n)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[Reservation]:
        """A reservation for one request, released when the block ends."""
        reservation = Reservation(self)
        try:
            yield reservation
        finally:
            reservation.release()


class Reservation:
    """The bytes one request holds of a :class:`BodyBudget`."""

    def __init__(self, budget: BodyBudget) -> None:
        self.budget = budget
        self.held = 0

    def need(self, total: int) -> None:
        """Make sure ``total`` bytes are held for this request (claiming only the growth)."""
        if total > self.held:
            self.budget.claim(total - self.held)
            self.held = total

    def release(self) -> None:
        """Give every held byte back."""
        self.budget.free(self.held)
        self.held = 0


class _Guard:
    """The connections of one server and the limits they live under."""

    def __init__(self, limits: TransportLimits, health_paths: frozenset[str]) -> None:
        self.limits = limits
        self.cap = limits.connections()
        self.health_paths = health_paths
        self.active: dict[Any, None] = {}

    def evict_slowest(self, now: float) -> bool:
        """Close the connection longest in its header phase (past ``evict_after``)."""
        victim, since = None, now - self.limits.evict_after
        for conn in self.active:
            started = conn.header_started
            if started is not None and started <= since:
                victim, since = conn, started
        if victim is None:
            return False
        victim.drop()
        return True


def _health_only(app: ASGIApp, health_paths: frozenset[str]) -> ASGIApp:
    """The application of a connection accepted beyond the cap: health, or 503."""

    async def reserve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] in health_paths:
            await app(scope, receive, send)
            return
        response = error_response(overloaded("connections"))
        response.headers["Connection"] = "close"
        await response(scope, receive, send)

    return reserve


_HEADER_CHUNK_SLACK = 64 * 1024
"""Bytes beyond ``header_bytes`` a header phase may receive before the parser has counted its
headers: they may share a read with the end of the previous request's body."""


def _refusal_bytes(err: TaskError) -> bytes:
    """``err`` as a whole HTTP/1.1 response that closes the connection (no app behind it)."""
    status = err.code.kind.http_status
    body = json.dumps(err.to_json(), separators=(",", ":")).encode()
    head = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
    ]
    head += [f"{name}: {value}" for name, value in (err.transport_headers() or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def guarded_protocol(
    limits: TransportLimits, *, health_path: str | Iterable[str]
) -> type[HttpToolsProtocol]:
    """Return uvicorn's httptools protocol with the header/body deadlines and the cap.

    One class per server: the returned class shares one set of connections. The request's
    target and headers are also bounded in bytes: the parser underneath (llhttp) sets no
    bound of its own, so a request target longer than ``target_bytes`` is answered
    ``URI_TOO_LONG`` (414) and a request whose request line and headers are not complete
    within ``header_bytes`` ``HEADERS_TOO_LARGE`` (431), and its connection closed.
    """
    paths = frozenset([health_path] if isinstance(health_path, str) else health_path)
    guard = _Guard(limits, paths)
    too_long = _refusal_bytes(
        TaskError(
            ErrorCode.URI_TOO_LONG,
            f"the request target (URL) exceeds {limits.target_bytes} bytes; send a shorter URL "
            "(request data belongs in the body)",
        )
    )
    too_large = _refusal_bytes(
        TaskError(
            ErrorCode.HEADERS_TOO_LARGE,
            f"the request line and headers exceed {limits.header_bytes} bytes; "
            "send fewer or shorter headers",
        )
    )

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        """An HTTP/1.1 connection that cannot stay open by sending a request slowly."""

        header_started: float | None = None
        """Loop time the current request's header phase began (``None`` outside it)."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._deadline: asyncio.TimerHandle | None = None
            self._phase = "headers"
            # Where the parser is in the newest request it has seen: "idle" (no byte of one
            # yet), "headers", "body", "complete"; and how many it began and we answered.
            self._message = "idle"
            self._begun = 0
            self._answered = 0
            self._header_bytes = 0  # bytes received in this header phase (a coarse bound)
            self._header_size = 0  # the request line and headers parsed (the exact bound)
            self._target_size = 0  # the request target parsed so far
            self._line_ended = False  # whether this header phase received its request line's end
            self._refusal = too_large  # what an oversized request is answered
            now = self.loop.time()
            while len(guard.active) >= guard.cap and guard.evict_slowest(now):
                pass  # room for a full slot, taken from connections stuck in their headers
            if len(guard.active) >= guard.cap + guard.limits.health_reserve:
                self.transport.abort()
                return
            if len(guard.active) >= guard.cap:
                self.app = _health_only(self.app, guard.health_paths)
            guard.active[self] = None
            self._enter("headers", now)

        def connection_lost(self, exc: Exception | None) -> None:
            guard.active.pop(self, None)
            self._cancel()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._message = "headers"
            self._begun += 1
            self._header_size = 0
            self._target_size = 0

        def on_url(self, url: bytes) -> None:
            self._header_size += len(url)
            self._target_size += len(url)
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._header_size += len(name) + len(value) + 4
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            if self._target_size > guard.limits.target_bytes:
                self._message, self._refusal = "oversized", too_long
                return  # never reaches the application
            if self._header_size > guard.limits.header_bytes:
                self._message, self._refusal = "oversized", too_large
                return
            super().on_headers_complete()
            self._message = "body"

        def on_body(self, body: bytes) -> None:
            if self._message != "oversized":
                super().on_body(body)

        def on_message_complete(self) -> None:
            if self._message != "oversized":
                super().on_message_complete()
                self._message = "complete"

        def data_received(self, data: bytes) -> None:
            if self._phase in ("headers", "idle"):
                self._header_bytes += len(data)
                if not self._line_ended and b"\n" in data:
                    self._line_ended = True
            super().data_received(data)
            if self.transport.is_closing():
                return
            message = self._message
            if message == "oversized":
                self._refuse(self._refusal)
            elif message in ("idle", "headers"):
                # Bytes of a request whose headers are not complete yet: the header deadline
                # runs, and what the parser holds of them is bounded (a target still being
                # received is a URL too long; past it, headers too large).
                if not self._line_ended and self._header_bytes > guard.limits.target_bytes + 64:
                    self._refuse(too_long)  # no line end yet: the target alone is past its bound
                elif self._header_bytes > guard.limits.header_bytes + _HEADER_CHUNK_SLACK:
                    self._refuse(too_large)
                elif self._phase != "headers":
                    self._enter("headers", self.loop.time())
            elif message == "body":
                if self._phase != "body":
                    self._enter("body", self.loop.time())
            elif self._phase != "handling":
                self._enter("handling", self.loop.time())

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._answered += 1
            if (
                self._answered == self._begun
                and self._message == "complete"
                and self._phase != "idle"
            ):
                # uvicorn's keep-alive timeout covers the wait for the next request.
                self._message = "idle"
                self._enter("idle", self.loop.time())

        def _cancel(self) -> None:
            deadline = getattr(self, "_deadline", None)
            if deadline is not None:
                deadline.cancel()
                self._deadline = None

        def _enter(self, phase: str, now: float) -> None:
            self._cancel()
            if phase == "idle" or (phase == "headers" and self._phase != "idle"):
                self._header_bytes = 0  # from idle, the bytes counted so far are this phase's
                self._line_ended = False
            self._phase = phase
            self.header_started = now if phase == "headers" else None
            if phase == "headers":
                self._deadline = self.loop.call_later(guard.limits.header_timeout, self.drop)
            elif phase == "body":
                self._deadline = self.loop.call_later(guard.limits.body_timeout, self.drop)

        def _refuse(self, response: bytes) -> None:
            """Answer ``response`` and close; abort instead while a response is under way."""
            if self.cycle is not None and not self.cycle.response_complete:
                self.drop()
                return
            self._cancel()
            self.header_started = None
            guard.active.pop(self, None)
            self.transport.write(response)
            self.transport.close()

        def drop(self) -> None:
            """Close this connection now (a deadline passed, or room is needed)."""
            self._cancel()
            self.header_started = None
            guard.active.pop(self, None)
            if not self.transport.is_closing():
                self.transport.abort()

    return GuardedHttpToolsProtocol
