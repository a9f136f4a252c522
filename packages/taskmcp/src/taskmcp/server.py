"""MCP servers over the taskcore front door (official ``mcp`` SDK, low-level server).

A server lists the tools of one :class:`~taskmcp.tools.Family` and runs every call through
:meth:`taskcore.Service.dispatch` (or :meth:`~taskcore.Service.call_workflow`) for the actor a
*principal* function names: over HTTP the actor the bearer token authenticated, on stdio the
local actor the command was started with. A refused call is an MCP tool error
(``isError: true``) whose text is the ``{error, code}`` JSON body every transport sends; nothing here decides anything a taskcore operation decides.

>>> import tempfile
>>> from taskcore import Actor, Registry, Service, Tier
>>> service = Service.open(tempfile.mkdtemp(), registry=Registry())
>>> actor = Actor(token_id="local", workspace="w", tier=Tier.AGENT)
>>> server = build_server(service, Family.QUEUE, fixed_principal(actor))
>>> server.name
'agent-task'
>>> service.close()
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from taskcore import Actor, Door, Response, Route, Service, TaskError, __version__
from taskcore.service import WORKFLOW_PREFIX
from taskcore.waiting import WaitingCall, wait_async

from taskmcp import calltime
from taskmcp.calltime import capped
from taskmcp.clientlog import on_set_level
from taskmcp.family import SCOPE_ACTOR_KEY, traceparent_of
from taskmcp.stdio import ScreenedStream
from taskmcp.tasks import QueueTasks, apply_extension
from taskmcp.tools import Family, operation_for_tool, tools

__all__ = [
    "SCOPE_ACTOR_KEY",
    "SCOPE_ROUTE_KEY",
    "Principal",
    "build_server",
    "fixed_principal",
    "run_stdio",
    "scope_principal",
]

SCOPE_ROUTE_KEY = "agent_task.route"
"""Key under the ASGI scope's ``state`` where the workspace endpoint leaves the route."""

Principal = Callable[[ServerRequestContext[Any, Any]], tuple[Actor, Route | None]]
"""Who is calling and for which route, derived from transport state (never from arguments)."""

_INSTRUCTIONS = {
    Family.QUEUE: (
        "agent-task queue: take work with agenttask_claimNext, heartbeat and finish it with "
        "agenttask_checkpoint (status DONE or FAILED, output in checkpoint.output), save "
        "resumable phases with agenttask_checkpoint_write, hand it back with "
        "agenttask_release, and check your work with session_gate when it is offered. Errors "
        "carry a stable code."
    ),
    Family.WORKSPACE: (
        "agent-task workflow tasks (capability agentscm.agent-workflow-tasks/v1): call "
        "capabilities, follow next, read instructions, claim, heartbeat and send a result. "
        "The repository and profile come from the endpoint URL."
    ),
}


def fixed_principal(actor: Actor, route: Route | None = None) -> Principal:
    """A principal that is always ``actor`` (stdio: the local process is the caller)."""

    def principal(_: ServerRequestContext[Any, Any]) -> tuple[Actor, Route | None]:
        return actor, route

    return principal


def scope_principal(ctx: ServerRequestContext[Any, Any]) -> tuple[Actor, Route | None]:
    """The principal the HTTP endpoint authenticated and stored in the request scope."""
    request = ctx.request
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    actor = state.get(SCOPE_ACTOR_KEY)
    if not isinstance(actor, Actor):
        from taskcore import ErrorCode

        raise TaskError(ErrorCode.UNAUTHENTICATED, "send 'Authorization: Bearer <token>'")
    route = state.get(SCOPE_ROUTE_KEY)
    return actor, route if isinstance(route, Route) else None


def _success(response: Response) -> types.CallToolResult:
    text = response.body.decode("utf-8")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=parsed if isinstance(parsed, dict) else None,
    )


def _failure(err: TaskError) -> types.CallToolResult:
    # The {error, code} body travels as the text content only: a tool's outputSchema describes
    # its success, and strict clients check structuredContent against it even on errors.
    body = json.dumps(err.to_json(), ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=body)], is_error=True)


def _call(
    service: Service,
    family: Family,
    actor: Actor,
    route: Route | None,
    tool: str,
    args: Any,
    waiting: WaitingCall | None = None,
    traceparent: str | None = None,
) -> Response:
    arguments = args if args is not None else {}
    name = operation_for_tool(service.registry, family, tool)
    if family is Family.WORKSPACE:
        if route is None:
            from taskcore import ErrorCode

            raise TaskError(ErrorCode.BAD_INPUT, "the workspace MCP endpoint needs a route")
        envelope = {"operation": name.removeprefix(WORKFLOW_PREFIX), "request": arguments}
        return service.call_workflow(
            actor, envelope, route=route, door=Door.MCP, traceparent=traceparent
        )
    return service.dispatch(
        actor,
        name,
        arguments,
        door=Door.MCP,
        surfaces=family.surfaces,
        waiting=waiting,
        traceparent=traceparent,
    )


async def _waiting_call(
    ctx: ServerRequestContext[Any, Any],
    service: Service,
    actor: Actor,
    params: types.CallToolRequestParams,
) -> Response:
    """A tool call that may wait (``agenttask_claimNext`` with ``waitMs``).

    Each attempt runs in a worker thread; between them the call awaits a wake-up on the
    event loop (:func:`taskcore.waiting.wait_async`), holding no thread, and reports
    progress (``notifications/progress``) at least every
    :data:`~taskcore.limits.MCP_PROGRESS_INTERVAL_MS` to a client that sent a progress
    token. ``waitMs`` is at most 30 s, so no tool call holds longer than that plus one
    attempt.
    """

    def attempt(waiting: WaitingCall) -> Awaitable[Response]:
        return anyio.to_thread.run_sync(
            _call,
            service,
            Family.QUEUE,
            actor,
            None,
            params.name,
            params.arguments,
            waiting,
            traceparent_of(ctx),
        )

    async def progress(waited: float, allowed: float) -> None:
        with contextlib.suppress(Exception):  # a client that stopped reading is no error
            await ctx.session.report_progress(
                round(waited, 3), round(allowed, 3), "waiting for a claimable task"
            )

    return await wait_async(service, attempt, progress=progress)


def _waits(service: Service, tool: str) -> bool:
    op = service.registry.for_tool(tool, Family.QUEUE.surfaces)
    return op is not None and op.waits


class _Server(Server[Any]):
    """The SDK's server, declaring no ``tools.listChanged``.

    At 2026-07-28 the SDK derives every ``listChanged`` flag from whether
    ``subscriptions/listen`` is served; we serve it for task status notifications
    (:mod:`taskmcp.listen`), but a connection's tool list never changes (it follows from the
    token, which is immutable), so no ``notifications/tools/list_changed`` is ever sent and the
    capability would be a promise we do not keep.
    """

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(*args, **kwargs)
        if capabilities.tools is not None:
            capabilities.tools.list_changed = False
        return capabilities


def build_server(
    service: Service,
    family: Family,
    principal: Principal,
    *,
    call_seconds: float | None = None,
) -> Server[Any]:
    """Build the MCP server of ``family`` over ``service``.

    A tool call answers within ``call_seconds`` (default
    :data:`taskmcp.calltime.TOOL_CALL_MAX_SECONDS`, 45 s); the server
    answers ``logging/setLevel`` on the 2025-11-25 wire (:mod:`taskmcp.clientlog`).

    The queue family also serves the MCP Tasks extension (:mod:`taskmcp.tasks`): durable
    task handles backed by the queue, for clients that declare it. Tools are listed from the
    registry on every ``tools/list``, so an operation registered
    later appears without rebuilding; the list holds what the principal's tier and autonomy
    reach. Calls run in a worker thread (the journal is
    synchronous) and never raise into the SDK: every outcome is a ``CallToolResult``.
    """

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            actor, _ = principal(ctx)
        except TaskError:
            return types.ListToolsResult(tools=[])
        return types.ListToolsResult(tools=tools(service.registry, family, actor, service=service))

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            actor, route = principal(ctx)
            if family is Family.QUEUE and _waits(service, params.name):
                response = await _waiting_call(ctx, service, actor, params)
            else:
                response = await anyio.to_thread.run_sync(
                    _call,
                    service,
                    family,
                    actor,
                    route,
                    params.name,
                    params.arguments,
                    None,
                    traceparent_of(ctx),
                    abandon_on_cancel=True,  # the time limit answers; the call finishes alone
                )
        except TaskError as err:
            return _failure(err)
        return _success(response)

    server: Server[Any] = _Server(
        "agent-task",
        version=__version__,
        title="agent-task " + family.value,
        instructions=_INSTRUCTIONS[family],
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    if family is Family.QUEUE:
        apply_extension(server, QueueTasks(service, principal, _failure), on_call_tool)
    # Every tools/call (the Tasks extension's included) answers within the time limit.
    entry = server.get_request_handler("tools/call")
    assert entry is not None
    server.add_request_handler(
        "tools/call",
        types.CallToolRequestParams,
        capped(entry.handler, _failure, call_seconds or calltime.TOOL_CALL_MAX_SECONDS),
    )
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, on_set_level)
    return server


async def run_stdio(service: Service, family: Family, actor: Actor, route: Route | None) -> None:
    """Serve ``family`` on stdin/stdout for one local client, as ``actor``, until EOF.

    A line that is not JSON is answered ``-32700`` and one that is not a JSON-RPC message
    ``-32600`` (:class:`~taskmcp.stdio.ScreenedStream`); the SDK alone would drop both.
    """
    server = build_server(service, family, fixed_principal(actor, route))
    async with stdio_server() as (read_stream, write_stream):
        screened = ScreenedStream(read_stream, write_stream)
        await server.run(screened, write_stream, server.create_initialization_options())
