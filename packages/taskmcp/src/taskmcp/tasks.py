"""The MCP Tasks extension (``io.modelcontextprotocol/tasks``), backed by the queue.

A client that declares the extension on a ``tools/call`` of ``agenttask_create`` gets a task
handle (``resultType: "task"``) instead of the created task; it polls ``tasks/get``, cancels with
``tasks/cancel``. The handle is the queue task, read through the front door each time
(:mod:`taskcore.queue.handles` decides the status, the guards and the wording), so handles
survive a restart and obey the same tier, autonomy, owner and workspace rules as every call.

Built on the SDK's extension interface (:class:`mcp.server.extension.Extension`,
:class:`~mcp.server.extension.MethodBinding`, the ``tools/call`` interceptor) and applied to the
low-level server with :func:`apply_extension`, the same steps ``MCPServer(extensions=...)``
takes. Wire shapes follow the extension's 2026-07-28 schema (flat ``Result & Task`` with
``ttlMs``/``pollIntervalMs``). The installed ``mcp_types`` carries only the 2025-11-25
experimental task types (nested ``{task}``, ``ttl``, ``pollInterval``); their request params
(``{taskId}``) are the same on both wires and are reused here, the result models are defined
below as subclasses of :class:`mcp_types.Result`.

Clients that do not declare the extension on the request see today's behaviour, and get
``-32021`` (missing required client capability) from ``tasks/*``. Handles are offered on
2026-07-28 connections only (capabilities are declared per request there; a handshake-era
wire cannot carry the ``task`` result type).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import anyio.to_thread
import mcp.types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, compose_tool_call_handler
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CancelTaskRequestParams,
    ClientCapabilities,
    GetTaskRequestParams,
    MissingRequiredClientCapabilityErrorData,
    RequestParams,
    Result,
    SubscriptionsListenRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from taskcore import Actor, Door, Route, Service, TaskError
from taskcore.queue.handles import (
    HANDLE_POLL_INTERVAL_MS,
    HANDLE_TOOLS,
    HandleStatus,
    TaskHandle,
    cancel_handle,
    create_handle,
    read_handle,
)

from taskmcp.family import traceparent_of
from taskmcp.listen import listen

__all__ = [
    "GATE_META_KEY",
    "TASKS_EXTENSION",
    "TASK_FAILED_CODE",
    "QueueTasks",
    "TaskHandleResult",
    "TaskStateResult",
    "UpdateTaskRequestParams",
    "apply_extension",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension identifier, advertised under ``capabilities.extensions``."""

GATE_META_KEY = "agent-task/approvalGate"
"""``_meta`` key of an ``input_required`` handle: the approval gate the task waits on."""

TASK_FAILED_CODE = -32603
"""The JSON-RPC code in a ``failed`` handle's ``error`` (the extension's own example uses it
for a failed execution); ``error.data`` carries ``{taskId, status, lastError}``."""

HandleWire = Literal["working", "input_required", "completed", "failed", "cancelled"]

Principal = Callable[[ServerRequestContext[Any, Any]], tuple[Actor, Route | None]]


class TaskStateResult(Result):
    """``tasks/get``: the task with its status-specific fields (a ``DetailedTask``)."""

    result_type: str = "complete"
    task_id: str
    status: HandleWire
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class TaskHandleResult(Result):
    """``CreateTaskResult``: a ``tools/call`` answered with a handle (``resultType: "task"``)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: HandleWire
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class UpdateTaskRequestParams(RequestParams):
    """``tasks/update``: responses to a task's outstanding input requests."""

    task_id: str
    input_responses: dict[str, Any] | None = None


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def _task_fields(handle: TaskHandle) -> dict[str, Any]:
    return {
        "taskId": handle.task_id,
        "status": handle.status.value,
        "statusMessage": handle.message,
        "createdAt": _iso(handle.task.created_at_ms),
        "lastUpdatedAt": _iso(handle.task.updated_at_ms),
        # The queue keeps its tasks: no retention limit to announce.
        "ttlMs": None,
        "pollIntervalMs": HANDLE_POLL_INTERVAL_MS,
    }


def _created(handle: TaskHandle) -> dict[str, Any]:
    return {"resultType": "task", **_task_fields(handle)}


def _detailed(service: Service, handle: TaskHandle) -> dict[str, Any]:
    out: dict[str, Any] = {"resultType": "complete", **_task_fields(handle)}
    view = service.codec.unstructure(handle.task)
    if handle.status is HandleStatus.COMPLETED:
        text = json.dumps(handle.output, ensure_ascii=False, separators=(",", ":"))
        out["result"] = types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=view
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
    elif handle.status is HandleStatus.FAILED:
        out["error"] = {
            "code": TASK_FAILED_CODE,
            "message": handle.message,
            "data": {"taskId": handle.task_id, "status": "FAILED", "lastError": view["lastError"]},
        }
    elif handle.status is HandleStatus.INPUT_REQUIRED:
        # Nothing the requester can answer: an operator decides the gate out of band.
        out["inputRequests"] = {}
        if handle.gate is not None:
            out["_meta"] = {GATE_META_KEY: service.codec.unstructure(handle.gate)}
    return out


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request (not the connection) declares the extension, on a modern wire."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = (ctx.meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    if not isinstance(capabilities, dict):
        return False
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def _missing_capability() -> MCPError:
    data = MissingRequiredClientCapabilityErrorData(
        required_capabilities=ClientCapabilities(extensions={TASKS_EXTENSION: {}})
    )
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"declare the {TASKS_EXTENSION} extension on this request",
        data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
    )


def _notified(service: Service, handle: TaskHandle) -> dict[str, Any]:
    """A ``notifications/tasks/status`` payload: the DetailedTask ``tasks/get`` answers."""
    return {k: v for k, v in _detailed(service, handle).items() if k != "resultType"}


def _rpc_error(err: TaskError) -> MCPError:
    return MCPError(code=err.code.kind.jsonrpc_code, message=err.describe(), data=err.to_json())


class QueueTasks(Extension):
    """The Tasks extension over ``service``, for the actor ``principal`` names."""

    identifier = TASKS_EXTENSION

    def __init__(
        self,
        service: Service,
        principal: Principal,
        failure: Callable[[TaskError], types.CallToolResult],
    ) -> None:
        self.service = service
        self.principal = principal
        self.failure = failure

    def methods(self) -> Sequence[MethodBinding]:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel`` (2026-07-28 wire only).

        The extension's ``subscriptions/listen`` with ``tasksStatus`` is a spec method the
        SDK will not bind for an extension: :func:`apply_extension` serves it
        (:meth:`listen`, :mod:`taskmcp.listen`).
        """
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", GetTaskRequestParams, self._get, modern),
            MethodBinding("tasks/update", UpdateTaskRequestParams, self._update, modern),
            MethodBinding("tasks/cancel", CancelTaskRequestParams, self._cancel, modern),
        )

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> HandlerResult:
        """``subscriptions/listen`` (2026-07-28): ``notifications/tasks/status`` of handles."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        try:
            actor, _ = self.principal(ctx)
        except TaskError as err:
            raise _rpc_error(err) from None
        return await listen(
            ctx,
            params,
            service=self.service,
            actor=actor,
            declared=_declared(ctx),
            detailed=_notified,
            missing_capability=_missing_capability,
            rpc_error=_rpc_error,
        )

    async def intercept_tool_call(
        self,
        params: types.CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        """Answer ``agenttask_create`` with a handle when this request declares the extension."""
        op = self.service.registry.for_tool(params.name)
        if op is None or op.name not in HANDLE_TOOLS or not _declared(ctx):
            return await call_next(ctx)
        try:
            actor, _ = self.principal(ctx)
            handle = await anyio.to_thread.run_sync(
                lambda: create_handle(
                    self.service,
                    actor,
                    params.arguments or {},
                    door=Door.MCP,
                    traceparent=traceparent_of(ctx),
                )
            )
        except TaskError as err:
            return self.failure(err)
        return _created(handle)

    def _caller(self, ctx: ServerRequestContext[Any, Any]) -> Actor:
        if not _declared(ctx):
            raise _missing_capability()
        try:
            actor, _ = self.principal(ctx)
        except TaskError as err:
            raise _rpc_error(err) from None
        return actor

    async def _read(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskHandle:
        actor = self._caller(ctx)
        try:
            return await anyio.to_thread.run_sync(
                lambda: read_handle(self.service, actor, task_id, door=Door.MCP)
            )
        except TaskError as err:
            raise _rpc_error(err) from None

    async def _get(
        self, ctx: ServerRequestContext[Any, Any], params: GetTaskRequestParams
    ) -> HandlerResult:
        return _detailed(self.service, await self._read(ctx, params.task_id))

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskRequestParams
    ) -> HandlerResult:
        # A queue task never asks its requester for input (an operator decides its gate), so
        # no key is ever outstanding: the responses are ignored, as the extension prescribes.
        await self._read(ctx, params.task_id)
        return {}

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: CancelTaskRequestParams
    ) -> HandlerResult:
        actor = self._caller(ctx)
        try:
            await anyio.to_thread.run_sync(
                lambda: cancel_handle(self.service, actor, params.task_id, door=Door.MCP)
            )
        except TaskError as err:
            raise _rpc_error(err) from None
        return {}


def apply_extension(server: Server[Any], extension: Extension, call_tool: Any) -> None:
    """Apply ``extension`` to a low-level ``server`` whose ``tools/call`` handler is ``call_tool``.

    The steps ``MCPServer(extensions=[...])`` takes, through the low-level server's public
    surface: each method binding becomes a request handler (refused if the method is taken;
    answered ``METHOD_NOT_FOUND`` outside its protocol versions), the extension is advertised
    under ``capabilities.extensions``, and its ``tools/call`` interceptor wraps ``call_tool``.
    """
    for binding in extension.methods():
        if server.get_request_handler(binding.method) is not None:
            raise ValueError(f"{binding.method!r} is already served")
        server.add_request_handler(binding.method, binding.params_type, _gated(binding))
    if isinstance(extension, QueueTasks):
        server.add_request_handler(
            "subscriptions/listen", SubscriptionsListenRequestParams, extension.listen
        )
    server.extensions[extension.identifier] = extension.settings()
    server.add_request_handler(
        "tools/call",
        types.CallToolRequestParams,
        compose_tool_call_handler([extension], call_tool),
    )


def _gated(binding: MethodBinding) -> Any:
    versions = binding.protocol_versions

    async def handler(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        if versions is not None and ctx.protocol_version not in versions:
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=binding.method)
        return await binding.handler(ctx, params)

    return handler
