"""taskmcp: MCP tools generated from taskcore's operation registry (official ``mcp`` SDK).

The tools hold no logic of their own: each call goes through :class:`taskcore.Service`. See
``docs/adapters.md`` for the adapter checklist.

The names below load their module on first use (PEP 562), so importing
:mod:`taskmcp.family` (what the HTTP app needs before the first MCP request) does not import
the ``mcp`` SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from taskcore.lazy import LazyExports

if TYPE_CHECKING:
    __version__: str
    from taskmcp.family import Family, error_response
    from taskmcp.http import McpEndpoint
    from taskmcp.server import (
        Principal,
        build_server,
        fixed_principal,
        run_stdio,
        scope_principal,
    )
    from taskmcp.tools import operation_for_tool, tool_operations, tools

__all__ = [
    "Family",
    "McpEndpoint",
    "Principal",
    "build_server",
    "error_response",
    "fixed_principal",
    "operation_for_tool",
    "run_stdio",
    "scope_principal",
    "tool_operations",
    "tools",
]

_EXPORTS = LazyExports(
    __name__,
    {
        "taskmcp.family": ("Family", "error_response", "tool_operations"),
        "taskmcp.http": ("McpEndpoint",),
        "taskmcp.server": (
            "Principal",
            "build_server",
            "fixed_principal",
            "run_stdio",
            "scope_principal",
        ),
        "taskmcp.tools": ("operation_for_tool", "tools"),
    },
    globals(),
    distribution="agenttask-mcp",  # __version__, read on first use
)


def __getattr__(name: str) -> Any:
    return _EXPORTS.load(name)


def __dir__() -> list[str]:
    return _EXPORTS.names()
