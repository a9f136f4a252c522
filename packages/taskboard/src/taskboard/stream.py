"""Writing an event stream to an ASGI connection (the board's, and ``GET /v1/events``).

The bytes come from :func:`taskcore.events.stream.event_frames`; this module only moves them:
``text/event-stream`` headers, one ``send`` per chunk awaited before the next chunk is asked
for (so the journal is read only as fast as the client takes data), a write that stays
blocked for ``write_timeout`` seconds closes the connection (the reader stopped reading), and
the client's disconnect ends the stream at once. It lives in the board's package because the
board and ``taskhttp`` (which mounts the board) both serve streams and only taskhttp may
import the board.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
from starlette.types import Receive, Send
from taskcore import TaskError
from taskcore.events.stream import Run, event_frames

__all__ = ["send_stream", "sse_headers"]


def sse_headers() -> list[tuple[bytes, bytes]]:
    """The response headers of an event stream (no caching, no proxy buffering)."""
    return [
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
    ]


async def send_stream(
    stream: Any,
    run: Run[Any],
    receive: Receive,
    send: Send,
    *,
    write_timeout: float,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Send ``stream``'s frames until the client leaves, the token lapses or a send stalls."""
    await send(
        {"type": "http.response.start", "status": 200, "headers": sse_headers() + (headers or [])}
    )

    async def watch(scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(watch, group.cancel_scope)
        try:
            async with contextlib.aclosing(event_frames(stream, run)) as frames:
                async for chunk in frames:
                    with anyio.fail_after(write_timeout):
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except TaskError:
            # The token stopped authenticating: end the response cleanly.
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except TimeoutError:
            pass  # the reader stopped taking data: returning closes the connection
        group.cancel_scope.cancel()
