"""MCP clients against the real registry: a live service over HTTP, and ``agent-task mcp --stdio``.

Both speak to the official ``mcp`` SDK client. The HTTP service runs uvicorn on a real socket
(port 0) over a journal in a temp dir; the stdio server is the installed ``agent-task``
command, started by the SDK's stdio client, with a token file written here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
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
