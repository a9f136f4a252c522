"""MCP clients against the real registry: a live service over HTTP, and ``agent-task mcp --stdio``.

Both speak to the official ``mcp`` SDK client. The HTTP service runs uvicorn on a real socket
(port 0) over a journal in a temp dir; the stdio server is the installed ``agent-task``
command, started by the SDK's stdio client, with a token file written here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import (
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    EmptyResult,
    GetTaskRequest,
    GetTaskRequestParams,
    Request,
)
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app

AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))

WORKSPACE_PATH = "/v1/hub/workspace/mcp?repository=acme%2Fwidgets&profile=default"
TOOL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"

ROLES: dict[str, tuple[str, Tier, int]] = {
    "admin": ("w1", Tier.ADMIN, 3),
    "member": ("w1", Tier.MEMBER, 2),
    "worker": ("w1", Tier.MEMBER, 1),
    "agent1": ("w1", Tier.AGENT, 1),
    "agent2": ("w1", Tier.AGENT, 1),
    "other": ("w2", Tier.MEMBER, 2),
}
"""Token roles: workspace, tier, autonomy. ``worker`` is a member seat with autonomy 1."""

T = TypeVar("T")
Script = Callable[[Client], Awaitable[T]]


class QueueService:
    """A journal in ``data_dir`` with one token per role; served over HTTP on demand."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.tokens: dict[str, str] = {}
        self.token_ids: dict[str, str] = {}
        self.service = Service.open(data_dir)
        for role, (workspace, tier, autonomy) in ROLES.items():
            issued = issue_token(
                self.service.storage,
                self.service.clock,
                workspace=workspace,
                tier=tier,
                autonomy=autonomy,
                name=role,
            )
            self.tokens[role] = issued.token
            self.token_ids[role] = issued.record.token_id
        self.server: BackgroundServer | None = None
        self.url = ""

    def start(self) -> QueueService:
        """Serve the journal over HTTP (a fresh service object when restarted)."""
        if self.server is None:
            self.server = BackgroundServer(create_app(self.service))
            self.url = self.server.start()
        return self

    def restart(self) -> None:
        """Stop the server and close the journal, then open it again and serve on a new port."""
        self.stop()
        self.service = Service.open(self.data_dir)
        self.start()

    def stop(self) -> None:
        """Stop serving and close the journal."""
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.service.close()

    def call(self, role: str, verb: str, body: dict[str, Any]) -> Any:
        """One in-process call through the front door (setup and checks, not the subject)."""
        return self.service.call(self.tokens[role], verb, body).json()

    def token_file(self, role: str, directory: Path) -> Path:
        """Write ``role``'s token to a file for ``agent-task mcp --stdio --token-file``."""
        path = directory / f"{role}.token"
        path.write_text(self.tokens[role])
        path.chmod(0o600)
        return path

    def http(
        self,
        role: str,
        path: str = "/mcp",
        *,
        mode: str = "auto",
        extensions: list[ClientExtension] | None = None,
    ) -> Client:
        """An SDK client over streamable HTTP with ``role``'s bearer token."""
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.tokens[role]}"})
        transport = streamable_http_client(self.url + path, http_client=http)
        return Client(transport, mode=mode, extensions=extensions)  # type: ignore[arg-type]

    def stdio(
        self,
        role: str,
        directory: Path,
        *,
        mode: str = "auto",
        extra: tuple[str, ...] = (),
        extensions: list[ClientExtension] | None = None,
    ) -> Client:
        """An SDK client of ``agent-task mcp --stdio`` acting as ``role`` on this journal."""
        args = [
            "mcp",
            "--stdio",
            "--data-dir",
            str(self.data_dir),
            "--token-file",
            str(self.token_file(role, directory)),
            *extra,
        ]
        # The SDK passes the child only a safe subset of the environment: name the database
        # the way a user's MCP configuration would.
        database = os.environ.get("AGENT_TASK_DATABASE")
        if database:
            args += ["--database", database]
        params = StdioServerParameters(command=AGENT_TASK, args=args)
        return Client(params, mode=mode, extensions=extensions)  # type: ignore[arg-type]


def run(client: Client, script: Script[T]) -> T:
    """Enter ``client`` and run ``script`` with it."""

    async def main() -> T:
        async with client as c:
            return await script(c)

    return anyio.run(main)


def body(result: Any) -> Any:
    """The JSON text of a tool result (success body or ``{error, code}``)."""
    return json.loads(result.content[0].text)


# -- a requester of the MCP Tasks extension (the client side, built on the SDK's claims) -------


class TasksRequester(ClientExtension):
    """Declares ``io.modelcontextprotocol/tasks`` and finishes a task handle by polling.

    ``call_tool`` on a client with this extension returns the task's final ``CallToolResult``
    (polling ``tasks/get`` every ``poll_seconds``; the server's ``pollIntervalMs`` is minutes-
    scale work advice, too slow for a test). ``session.call_tool(..., allow_claimed=True)``
    returns the raw handle instead.
    """

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self, poll_seconds: float = 0.1, max_polls: int = 600) -> None:
        self.poll_seconds = poll_seconds
        self.max_polls = max_polls
        self.seen: list[str] = []

    def claims(self) -> tuple[ResultClaim[Any], ...]:
        from taskmcp.tasks import TaskHandleResult

        return (ResultClaim(result_type="task", model=TaskHandleResult, resolve=self._resolve),)

    async def _resolve(self, handle: Any, ctx: ClaimContext) -> CallToolResult:
        for _ in range(self.max_polls):
            state = await get_task(ctx.session, handle.task_id)
            self.seen.append(state.status)
            if state.status == "completed":
                return CallToolResult.model_validate(state.result)
            if state.status in ("failed", "cancelled"):
                raise RuntimeError(f"task {handle.task_id} ended {state.status}: {state.error}")
            await anyio.sleep(self.poll_seconds)
        raise TimeoutError(f"task {handle.task_id} did not finish")


async def get_task(session: Any, task_id: str) -> Any:
    """``tasks/get`` through the SDK session (the request params type is the SDK's)."""
    from taskmcp.tasks import TaskStateResult

    request = GetTaskRequest(params=GetTaskRequestParams(task_id=task_id))
    return await session.send_request(request, TaskStateResult)


async def cancel_task(session: Any, task_id: str) -> Any:
    """``tasks/cancel`` through the SDK session."""
    request = CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id))
    return await session.send_request(request, EmptyResult)


class UpdateTaskRequest(Request[Any, Literal["tasks/update"]]):
    """``tasks/update`` (the installed SDK's types predate it: the 2025-11-25 tasks had none)."""

    method: Literal["tasks/update"] = "tasks/update"
    params: Any


async def update_task(session: Any, task_id: str, responses: dict[str, Any]) -> Any:
    """``tasks/update`` through the SDK session."""
    from taskmcp.tasks import UpdateTaskRequestParams

    params = UpdateTaskRequestParams(task_id=task_id, input_responses=responses)
    return await session.send_request(UpdateTaskRequest(params=params), EmptyResult)
