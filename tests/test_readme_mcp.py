"""The README's MCP client snippets (Claude Code, Codex) parse and work against a live service.

Each snippet is taken from README.md as a user would copy it, parsed the way its client reads
it (a shell command line; TOML), and the URL and bearer header it configures are used, as they
are, by the official SDK client against a running service (only the port differs).
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from taskhttp.openapi import MCP_PATH

from tests.taskmcp.support import QueueService

README = Path(__file__).resolve().parents[1] / "README.md"


def _mcp_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## MCP\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _block(language: str, needle: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", _mcp_section(), flags=re.DOTALL)
    found = [b for b in blocks if needle in b]
    assert len(found) == 1, f"expected one {language} block with {needle!r} in README's MCP section"
    return found[0]


def claude_code_snippet() -> list[str]:
    """The ``claude mcp add`` command line, split as a POSIX shell would (continuations joined)."""
    return shlex.split(_block("sh", "claude mcp add").replace("\\\n", " "))


def codex_snippet() -> dict:
    """The ``~/.codex/config.toml`` fragment, parsed as TOML."""
    return tomllib.loads(_block("toml", "[mcp_servers."))


@pytest.fixture(scope="module")
def queue(tmp_path_factory):
    svc = QueueService(tmp_path_factory.mktemp("readme")).start()
    yield svc
    svc.stop()


def _list_tools(url: str, headers: dict[str, str]) -> list[str]:
    async def main() -> list[str]:
        http = create_mcp_http_client(headers=headers)
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return [t.name for t in (await client.list_tools()).tools]

    return anyio.run(main)


def _on_live_port(url: str, live_url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=urlsplit(live_url).netloc))


def test_the_claude_code_snippet_adds_an_http_server_with_a_bearer_header(queue, monkeypatch):
    argv = claude_code_snippet()
    assert argv[:3] == ["claude", "mcp", "add"]
    at = argv.index("--transport")
    assert argv[at + 1] == "http"
    rest = argv[3:at] + argv[at + 2 :]
    header_at = rest.index("--header")
    name, url = rest[0], rest[1]
    assert name == "agent-task"
    assert urlsplit(url).path == MCP_PATH
    assert header_at == 2  # the variadic --header comes after the name and URL
    monkeypatch.setenv("AGENT_TASK_TOKEN", queue.tokens["agent1"])
    header = os.path.expandvars(rest[header_at + 1])
    key, _, value = header.partition(": ")
    assert key == "Authorization"
    assert value == f"Bearer {queue.tokens['agent1']}"
    names = _list_tools(_on_live_port(url, queue.url), {key: value})
    assert {"agenttask_claimNext", "agenttask_checkpoint", "agenttask_release"} <= set(names)


def test_the_codex_snippet_is_a_streamable_http_server_with_a_bearer_token_variable(queue):
    config = codex_snippet()
    server = config["mcp_servers"]["agent-task"]
    assert set(server) == {"url", "bearer_token_env_var"}
    assert urlsplit(server["url"]).path == MCP_PATH
    assert server["bearer_token_env_var"] == "AGENT_TASK_TOKEN"
    # Codex sends the variable's value as "Authorization: Bearer <value>"
    headers = {"Authorization": f"Bearer {queue.tokens['agent1']}"}
    names = _list_tools(_on_live_port(server["url"], queue.url), headers)
    assert "agenttask_claimNext" in names
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)
