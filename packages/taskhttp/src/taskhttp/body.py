"""Reading request bodies: media type first, then a bound enforced while the bytes arrive.

A declared ``Content-Length`` above the bound is refused before a byte is read; a body sent
without one (chunked) is counted as it streams and refused the moment it passes the bound, so
nothing larger than the bound is ever held in memory or parsed. The bytes a body holds are
reserved from the application's :class:`~taskhttp.limits.BodyBudget` (all at once when the
length is declared, as they arrive otherwise), so all requests together hold a bounded amount.
"""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from taskcore import ErrorCode, TaskError

from taskhttp.limits import Reservation

__all__ = [
    "JSON",
    "OCTET_STREAM",
    "BodyDeadline",
    "declared_length",
    "read_body",
    "require_media_type",
]

JSON = "application/json"
"""The media type of every JSON route."""
OCTET_STREAM = "application/octet-stream"
"""The media type of the collector upload route."""


def require_media_type(request: Request, expected: str) -> None:
    """Refuse (415) a request whose ``Content-Type`` is not ``expected``.

    Parameters are allowed only as ``charset=utf-8`` on JSON, which is what JSON is anyway.
    """
    header = request.headers.get("content-type")
    if header is None:
        raise TaskError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, f"send 'Content-Type: {expected}'")
    media, *params = (part.strip() for part in header.split(";"))
    ok = media.lower() == expected
    for param in params:
        key, _, value = param.partition("=")
        is_charset = expected == JSON and key.strip().lower() == "charset"
        if not is_charset or value.strip().strip('"').lower() != "utf-8":
            ok = False
    if not ok:
        raise TaskError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f"this route takes '{expected}', not {header[:80]!r}",
        )


def _too_large(limit: int) -> TaskError:
    return TaskError(
        ErrorCode.PAYLOAD_TOO_LARGE, f"the body is larger than {limit} bytes; send less"
    )


def declared_length(request: Request, limit: int) -> int | None:
    """Return the declared ``Content-Length`` (``None`` if streamed); refuse one over ``limit``.

    Reads no body: transports call it before authenticating.
    """
    declared = request.headers.get("content-length")
    if declared is None:
        return None
    if not declared.strip().isdigit():
        raise TaskError(ErrorCode.BAD_INPUT, "Content-Length is not a number")
    if int(declared) > limit:
        raise _too_large(limit)
    return int(declared)


async def read_body(request: Request, limit: int, reservation: Reservation | None = None) -> bytes:
    """Return the request body, refusing (413) anything over ``limit`` bytes while reading.

    With ``reservation``, the body's bytes are reserved before they are held (503
    ``OVERLOADED`` when the budget has no room).
    """
    declared = declared_length(request, limit)
    if reservation is not None and declared is not None:
        reservation.need(declared)
    # The ASGI messages read directly (what ``Request.stream`` does, without its generator).
    receive = request.receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "http.request":
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit)
                if reservation is not None:
                    reservation.need(size)
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        elif kind == "http.disconnect":
            raise TaskError(ErrorCode.BAD_INPUT, "the client went away mid-body")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class BodyDeadline:
    """ASGI middleware: a request's body must be all in within ``seconds`` of its headers.

    Under ``agent-task serve`` the server's protocol enforces this and closes the connection
    (:func:`taskhttp.limits.guarded_protocol`); an application run by another ASGI server
    enforces it here, where an application can: the application is called once the headers
    are in, and a ``receive`` of the body that would end after the deadline raises
    ``BAD_INPUT`` instead of waiting (the handlers answer it like any refused body; the
    server then closes the connection, whose body was not read to its end). Once the body is
    complete, later ``receive`` calls (a disconnect being awaited) are not bounded.
    """

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Call the application with a ``receive`` bounded by the body's deadline."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.seconds
        complete = False

        async def bounded() -> Message:
            nonlocal complete
            if complete:
                return await receive()
            try:
                with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                    message = await receive()
            except TimeoutError:
                raise TaskError(
                    ErrorCode.BAD_INPUT,
                    f"the request body did not arrive within {self.seconds:g} s of its "
                    "headers; send it at once",
                ) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        await self.app(scope, bounded, send)
