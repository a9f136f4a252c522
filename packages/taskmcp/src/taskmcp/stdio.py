"""The stdio transport's read side, screened: malformed lines get their JSON-RPC error.

The SDK's stdio reader hands a line it cannot validate to the server as an exception, and
the server drops it, so a client that sent a broken line waits for an answer that never
comes. :class:`ScreenedStream` sits between that reader and the server: it passes every
message through and answers each exception in its place, on the same write stream (so the
answer is ordered with the others): ``-32700`` for a line that is not JSON, ``-32600`` for
JSON that is not a JSON-RPC message (:mod:`taskmcp.jsonrpc` says why, and the request's
``id`` is echoed when it has a valid one).
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from taskcore import ErrorCode, TaskError

from taskmcp.jsonrpc import INVALID_REQUEST, PARSE_ERROR, error_body, invalid, message_id

__all__ = ["ScreenedStream", "classify"]


def _offending(exc: Exception) -> Any:
    """The JSON value a validation error was about (the whole message), when it says."""
    if isinstance(exc, ValidationError):
        for detail in exc.errors():
            value = detail.get("input")
            if isinstance(value, dict | list):
                return value
    return None


def classify(exc: Exception) -> dict[str, Any]:
    """The JSON-RPC error answer to a line the SDK's reader could not validate.

    >>> def fail(line):
    ...     try:
    ...         mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    ...     except ValidationError as exc:
    ...         return classify(exc)
    >>> fail("{")["error"]["code"]
    -32700
    >>> answer = fail('{"jsonrpc": "2.0", "id": 4, "method": 5}')
    >>> answer["id"], answer["error"]["code"], answer["error"]["data"]["code"]
    (4, -32600, 'BAD_INPUT')
    """
    if isinstance(exc, ValidationError) and any(
        detail.get("type") == "json_invalid" for detail in exc.errors()
    ):
        err = TaskError(
            ErrorCode.MALFORMED_JSON,
            "the line is not valid JSON; send one JSON-RPC message per line",
        )
        return error_body(PARSE_ERROR, err, None)
    message = _offending(exc)
    refusal = invalid(message) or TaskError(
        ErrorCode.BAD_INPUT, "the line is not a JSON-RPC message this server accepts"
    )
    return error_body(INVALID_REQUEST, refusal, message_id(message))


class ScreenedStream:
    """A ``ReadStream`` over the SDK's stdio reader that answers what it cannot read."""

    def __init__(
        self,
        inner: ReadStream[SessionMessage | Exception],
        replies: WriteStream[SessionMessage],
    ) -> None:
        self.inner = inner
        self.replies = replies

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message (the SDK's context streams carry one)."""
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next message; exceptions are answered here and never returned."""
        while True:
            item = await self.inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = mcp_types.jsonrpc_message_adapter.validate_json(
                json.dumps(classify(item)), by_name=False
            )
            await self.replies.send(SessionMessage(answer))

    async def aclose(self) -> None:
        """Close the underlying stream."""
        await self.inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None
