"""taskmcp: MCP tools generated from taskcore's operation registry (official ``mcp`` SDK).

The tools hold no logic of their own: each call goes through :class:`taskcore.Service`. See
``docs/adapters.md`` for the adapter checklist.
"""

from taskmcp.http import McpEndpoint, error_response
from taskmcp.server import Principal, build_server, fixed_principal, run_stdio, scope_principal
from taskmcp.tools import Family, operation_for_tool, tool_operations, tools

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
