"""Our MCP server, configured in the real Claude Code and Codex, seen and called by the model.

The service runs on 127.0.0.1 (``/mcp``, the queue tools, bearer token of an agent seat). Each
harness is configured the way its documentation says a user does it: Claude Code with
``--mcp-config`` (an ``http`` server with an ``Authorization`` header), Codex with an
``[mcp_servers.agenttask]`` table (``url`` and ``bearer_token_env_var``). The assertions read
the tool list each harness sent the scripted model, then a scripted ``claimNext`` call claims
a queued task for real.

Tool names are the portable ones (``agenttask_claimNext``: ``.`` becomes ``_``; branch ``mcp``),
so they pass both APIs' ``^[a-zA-Z0-9_-]{1,64}$`` (the scripted model checks every request).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.harness.harnesses import claude_env, codex_config, codex_env, run_claude, run_codex
from tests.harness.scripted_model import ScriptedModel, ToolCall, Turn, call, say
from tests.taskmcp.support import QueueService, run

SERVER = "agenttask"


@pytest.fixture
def queue(tmp_path: Path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _offered(queue: QueueService, role: str) -> set[str]:
    """What our server lists for ``role``, asked with the official SDK client."""

    async def names(client: Client) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    return run(queue.http(role), names)


def _queued(queue: QueueService) -> str:
    created = queue.call(
        "member", "agenttask.create", {"verb": "agent.run", "payload": {"title": "fix login"}}
    )
    assert created["status"] == "QUEUED"
    return str(created["taskId"])


def _claim_result(text: str) -> dict[str, Any]:
    """The claimNext answer inside a tool result (Codex prefixes timing lines)."""
    start = text.index('{"claimed"')
    return json.JSONDecoder().raw_decode(text[start:])[0]


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    return proj


def _claude_mcp_config(queue: QueueService, role: str) -> str:
    return json.dumps(
        {
            "mcpServers": {
                SERVER: {
                    "type": "http",
                    "url": f"{queue.url}/mcp",
                    "headers": {"Authorization": f"Bearer {queue.tokens[role]}"},
                }
            }
        }
    )


def test_claude_code_offers_our_tools_and_claim_next_claims(
    claude_bin, model: ScriptedModel, proxy, home, tmp_path, queue
):
    task_id = _queued(queue)
    offered = _offered(queue, "agent1")
    assert "agenttask_claimNext" in offered
    model.extend([call(f"mcp__{SERVER}__agenttask_claimNext"), say("Claimed the task.")])
    # Tool search off: Claude Code sends every tool's schema instead of deferring MCP tools.
    env = claude_env(home, model.url, proxy.url, {"ENABLE_TOOL_SEARCH": "false"})
    result = run_claude(
        claude_bin,
        "claim the next task",
        cwd=_project(tmp_path),
        env=env,
        args=["--mcp-config", _claude_mcp_config(queue, "agent1"), "--strict-mcp-config"],
    )
    assert result.returncode == 0, result.stderr
    assert model.played == 2
    assert model.overruns == 0
    first = model.loop_requests[0]
    ours = {t["name"]: t for t in first.tools if t["name"].startswith(f"mcp__{SERVER}__")}
    assert set(ours) == {f"mcp__{SERVER}__{name}" for name in offered}
    claim_next = ours[f"mcp__{SERVER}__agenttask_claimNext"]
    assert claim_next["description"]
    assert claim_next["input_schema"]["type"] == "object"
    # The call went to our server and its answer came back to the model.
    [block] = [
        b
        for b in model.loop_requests[1].body["messages"][-1]["content"]
        if b.get("type") == "tool_result"
    ]
    content = block["content"]
    text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
    answer = _claim_result(text)
    assert answer["claimed"] is True
    assert answer["task"]["taskId"] == task_id
    assert queue.call("member", "agenttask.get", {"taskId": task_id})["status"] == "LEASED"


def test_claude_code_defers_our_tools_behind_tool_search_by_default(
    claude_bin, model: ScriptedModel, proxy, home, tmp_path, queue
):
    """With its default tool search, Claude Code (2.1.332) names MCP tools in the prompt and
    sends their schemas only when the model asks; the call still reaches our server."""
    task_id = _queued(queue)
    model.extend([call(f"mcp__{SERVER}__agenttask_claimNext"), say("Claimed.")])
    result = run_claude(
        claude_bin,
        "claim the next task",
        cwd=_project(tmp_path),
        env=claude_env(home, model.url, proxy.url),
        args=["--mcp-config", _claude_mcp_config(queue, "agent1"), "--strict-mcp-config"],
    )
    assert result.returncode == 0, result.stderr
    assert model.played == 2
    first = model.loop_requests[0]
    # 2.1.332 defers them (named in the prompt, no schema); 2.1.197 still sent them whole.
    deferred = not any(name.startswith("mcp__") for name in first.tool_names)
    if deferred:
        assert f"mcp__{SERVER}__agenttask_claimNext" in first.text()
    else:
        assert f"mcp__{SERVER}__agenttask_claimNext" in first.tool_names
    assert queue.call("member", "agenttask.get", {"taskId": task_id})["status"] == "LEASED"


def test_codex_offers_our_tools_in_a_namespace_and_claim_next_claims(
    codex_bin, model: ScriptedModel, proxy, home, tmp_path, queue
):
    task_id = _queued(queue)
    offered = _offered(queue, "agent1")
    proj = _project(tmp_path)
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        codex_config(
            model.url,
            trusted=[proj],
            extra=(
                f"\n[mcp_servers.{SERVER}]\n"
                f'url = "{queue.url}/mcp"\n'
                'bearer_token_env_var = "AGENT_TASK_MCP_TOKEN"\n'
            ),
        )
    )
    model.extend(
        [
            Turn(calls=(ToolCall("agenttask_claimNext", {}, namespace=f"mcp__{SERVER}"),)),
            say("Claimed the task."),
        ]
    )
    env = codex_env(home, codex_home, proxy.url, {"AGENT_TASK_MCP_TOKEN": queue.tokens["agent1"]})
    result = run_codex(codex_bin, "claim the next task", cwd=proj, env=env)
    assert result.returncode == 0, result.stderr
    assert model.played == 2
    assert model.overruns == 0
    first = model.loop_requests[0]
    functions = first.namespace(f"mcp__{SERVER}")
    assert set(functions) == offered
    assert functions["agenttask_claimNext"]["type"] == "function"
    assert functions["agenttask_claimNext"]["parameters"]["type"] == "object"
    [output] = [
        item
        for item in model.loop_requests[1].body["input"]
        if item.get("type") == "function_call_output"
    ]
    answer = _claim_result(output["output"])
    assert answer["claimed"] is True
    assert answer["task"]["taskId"] == task_id
    assert queue.call("member", "agenttask.get", {"taskId": task_id})["status"] == "LEASED"
