"""``GET /v1/events``: the event stream as ``text/event-stream`` (server-sent events).

The endpoint reads the transport (the bearer token, ``Last-Event-ID``, the query's filters:
``operation`` repeated, ``task``, ``lastEventId`` for clients that cannot set the header) and
hands everything else to taskcore: :func:`taskcore.events.stream.open_events` opens the
stream (one audited call, the stream slots, the resume check) and
:func:`~taskcore.events.stream.event_frames` yields the bytes. A refusal before the stream
starts is the usual ``{error, code}`` answer (401, 410 ``EVENTS_EXPIRED``, 429, 503, ...).

Writing is where a slow reader is bounded: each chunk is sent before the next is read from
the journal, the server's transport pauses the send when the client stops reading (its
write buffer is uvicorn's flow control), and a send that stays paused for
:data:`~taskcore.limits.EVENTS_WRITE_TIMEOUT_SECONDS` closes the connection. The client's
disconnect ends the stream at once; so does the token's revocation (checked every
heartbeat).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import Receive, Scope, Send
from taskboard.stream import send_stream
from taskcore import Door, ErrorCode, Service, TaskError
from taskcore.auth import bearer_from_header
from taskcore.events.stream import EVENTS_OPERATION, open_events
from taskcore.limits import EVENTS_FILTERS_MAX, EVENTS_WRITE_TIMEOUT_SECONDS
from taskmcp.family import error_response

from taskhttp.openapi import EVENTS_PATH
from taskhttp.threads import WorkerPool

__all__ = ["EVENTS_PATH", "EventsEndpoint"]


def _last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id") or request.query_params.get("lastEventId")
    if raw is None or raw == "":
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "Last-Event-ID must be an event id this stream sent (a non-negative integer)",
            path="$.lastEventId",
        )
    return int(raw)


def _filters(request: Request) -> tuple[tuple[str, ...], str | None]:
    operations = tuple(request.query_params.getlist("operation"))
    tasks = request.query_params.getlist("task")
    if len(operations) > EVENTS_FILTERS_MAX or len(tasks) > 1:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            f"at most {EVENTS_FILTERS_MAX} operation= and one task= filter",
        )
    return operations, (tasks[0] if tasks else None)


class EventsEndpoint:
    """``GET /v1/events`` as a bare ASGI endpoint."""

    def __init__(
        self,
        service: Service,
        pool: WorkerPool,
        *,
        write_timeout: float = EVENTS_WRITE_TIMEOUT_SECONDS,
    ) -> None:
        self.service = service
        self.pool = pool
        self.write_timeout = write_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Open the stream (or answer its refusal), then send it until it ends."""
        request = Request(scope, receive)
        bearer = bearer_from_header(request.headers.get("authorization"))
        try:
            last_event_id = _last_event_id(request)
            operations, task_id = _filters(request)
        except TaskError as err:
            await self.pool.run(self.service.refuse, bearer, EVENTS_OPERATION, err)
            await error_response(err)(scope, receive, send)
            return
        client = scope.get("client")
        opening = open_events(
            self.service,
            bearer,
            last_event_id=last_event_id,
            operations=operations,
            task_id=task_id,
            door=Door.HTTP,
            client=str(client[0]) if client else None,
            traceparent=request.headers.get("traceparent"),
        )
        try:
            stream = await self.pool.run(opening.__enter__)
        except TaskError as err:
            await error_response(err)(scope, receive, send)
            return
        try:
            await send_stream(
                stream, self.pool.run, receive, send, write_timeout=self.write_timeout
            )
        finally:
            opening.__exit__(None, None, None)
