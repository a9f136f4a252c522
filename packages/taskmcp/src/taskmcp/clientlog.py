"""Log messages to the MCP client (``notifications/message``) and ``logging/setLevel``.

On the 2025-11-25 wire a client sets the lowest level it wants with ``logging/setLevel``;
the level is kept for its connection (``agent-task mcp --stdio``: the whole session; over
HTTP each POST is its own connection, since the endpoints are stateless, so a level set
there lasts for that request only) and the server sends nothing below it (``info`` until
set). On the 2026-07-28 wire ``logging/setLevel`` is gone: a request opts in with the
``io.modelcontextprotocol/logLevel`` key of its ``_meta`` and the SDK drops what is below
it. The messages the server sends: a tool call cut at the time limit (``warning``,
:mod:`taskmcp.calltime`).
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, get_args

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["DEFAULT_LEVEL", "LEVELS", "LOGGER", "log", "on_set_level"]

LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)
"""RFC 5424's levels, least severe first (the SDK's ``LoggingLevel``)."""
DEFAULT_LEVEL = "info"
"""What a 2025-11-25 connection gets before it sets a level."""
LOGGER = "agent-task"
"""The ``logger`` name of every message."""

_STATE_KEY = "agent_task.log_level"


def _state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    """The connection's scratch state (``Connection.state``), reached through its session."""
    state = getattr(getattr(ctx.session, "_connection", None), "state", None)
    return state if isinstance(state, dict) else None


async def on_set_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    """``logging/setLevel``: keep the level for this connection."""
    state = _state(ctx)
    if state is not None:
        state[_STATE_KEY] = params.level
    return types.EmptyResult()


def level_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The lowest level this (2025-11-25) connection wants."""
    level = (_state(ctx) or {}).get(_STATE_KEY, DEFAULT_LEVEL)
    return level if level in LEVELS else DEFAULT_LEVEL


async def log(ctx: ServerRequestContext[Any, Any], level: str, data: Any) -> None:
    """Send ``data`` at ``level`` if the client wants it; a client gone is no error."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and LEVELS.index(level) < LEVELS.index(
        level_of(ctx)
    ):
        return
    # The logging utility is deprecated on the 2026-07-28 wire, and still the 2025-11-25 one.
    with warnings.catch_warnings(), contextlib.suppress(Exception):
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ctx.session.send_log_message(level, data, logger=LOGGER)  # type: ignore[arg-type]
