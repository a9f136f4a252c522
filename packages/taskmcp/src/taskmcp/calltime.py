"""The time limit of an MCP tool call: an answer within 45 s, whatever the call does.

Clients stop listening to a tool call after about 60 s (the TypeScript SDK's default request
timeout, which Claude Desktop keeps) and Claude Code's HTTP tool calls have hit 30 to 60 s
limits. :func:`capped` wraps the server's ``tools/call`` handler: past
:data:`~taskcore.limits.MCP_TOOL_CALL_MAX_MS` the request is answered with the tool error
``CALL_TIMED_OUT`` (and a ``warning`` log message, :mod:`taskmcp.clientlog`). The call's
worker thread is abandoned, not killed: its transaction commits or rolls back on its own and
is audited as every call is, so the answer says to read the effect back before calling again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from taskcore import ErrorCode, TaskError
from taskcore.limits import MCP_TOOL_CALL_MAX_MS

from taskmcp.clientlog import log

__all__ = ["TOOL_CALL_MAX_SECONDS", "capped", "timed_out"]

TOOL_CALL_MAX_SECONDS = MCP_TOOL_CALL_MAX_MS / 1000

Handler = Callable[[ServerRequestContext[Any, Any], types.CallToolRequestParams], Awaitable[Any]]


def timed_out(tool: str, seconds: float) -> TaskError:
    """The error of a call to ``tool`` that held ``seconds``.

    >>> timed_out("agenttask_create", 45).code.value
    'CALL_TIMED_OUT'
    """
    return TaskError(
        ErrorCode.CALL_TIMED_OUT,
        f"{tool[:64]} did not answer within {seconds:g} s; it may still complete: read its "
        "effect back (agenttask_get, agenttask_feed) before calling it again, or repeat it "
        "with the same idempotency key",
    )


def capped(
    handler: Handler,
    failure: Callable[[TaskError], types.CallToolResult],
    seconds: float = TOOL_CALL_MAX_SECONDS,
) -> Callable[[ServerRequestContext[Any, Any], types.CallToolRequestParams], Awaitable[Any]]:
    """``handler`` answering within ``seconds``: past it, ``failure(CALL_TIMED_OUT)``."""

    async def call(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> HandlerResult:
        with anyio.move_on_after(seconds):
            answer: HandlerResult = await handler(ctx, params)
            return answer
        err = timed_out(params.name, seconds)
        await log(ctx, "warning", err.to_json())
        return failure(err)

    return call
