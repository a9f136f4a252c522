"""taskmcp: MCP tools generated from taskcore's operation registry (official ``mcp`` SDK).

The tools hold no logic of their own: each call goes through :class:`taskcore.Service`. See
``docs/adapters.md`` for the adapter checklist.

The names below load their module on first use (PEP 562), so importing
:mod:`taskmcp.family` (what the HTTP app needs before the first MCP request) does not import
the ``mcp`` SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOME = {
    "Family": "taskmcp.family",
    "error_response": "taskmcp.family",
    "tool_operations": "taskmcp.family",
    "McpEndpoint": "taskmcp.http",
    "Principal": "taskmcp.server",
    "build_server": "taskmcp.server",
    "fixed_principal": "taskmcp.server",
    "run_stdio": "taskmcp.server",
    "scope_principal": "taskmcp.server",
    "operation_for_tool": "taskmcp.tools",
    "tools": "taskmcp.tools",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'taskmcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
