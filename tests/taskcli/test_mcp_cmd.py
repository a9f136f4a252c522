import json
import os
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from taskcore import Service, Tier
from taskcore.auth import TokenAdmin

AGENT_TASK = str(Path(sys.executable).with_name("agent-task"))


def _session(args, script, env=None):
    # The SDK gives the child a safe subset of the environment: name the database as a user's
    # MCP configuration would.
    database = os.environ.get("AGENT_TASK_DATABASE")
    extra = ["--database", database] if database else []
    params = StdioServerParameters(
        command=AGENT_TASK, args=["mcp", "--stdio", *args, *extra], env=env
    )

    async def main():
        async with Client(params, mode="legacy") as client:
            return await script(client)

    return anyio.run(main)


def test_local_actor_gets_the_queue_tools_and_calls_them(tmp_path):
    data = tmp_path / "data"

    async def script(client):
        listed = await client.list_tools()
        result = await client.call_tool("agenttask_cancel", {"taskId": "at_missing"})
        return [t.name for t in listed.tools], result

    names, result = _session(
        ["--data-dir", str(data), "--workspace", "w1", "--tier", "member", "--autonomy", "2"],
        script,
    )
    assert "agenttask_reorder" in names
    assert "session_gate" in names
    assert "agenttask_claimNext" in names
    assert "agenttask_list" not in names  # admin only
    assert result.is_error
    assert json.loads(result.content[0].text)["code"] == "NOT_FOUND"
    service = Service.open(data)
    try:
        assert service.audit_count(workspace="w1", operation="agenttask.cancel") == 1
    finally:
        service.close()


def test_a_token_file_makes_the_caller_that_tokens_actor(tmp_path):
    data = tmp_path / "data"
    with TokenAdmin(data, create=True) as admin:
        issued = admin.create(workspace="w7", tier=Tier.AGENT, autonomy=1)
    token_file = tmp_path / "t"
    token_file.write_text(issued.token)

    async def script(client):
        return await client.call_tool("agenttask_reorder", {"taskId": "at_1", "priority": 1})

    result = _session(["--data-dir", str(data), "--token-file", str(token_file)], script)
    assert json.loads(result.content[0].text)["code"] == "FORBIDDEN"
    service = Service.open(data)
    try:
        assert service.audit_count(workspace="w7") == 1
    finally:
        service.close()


def test_a_route_serves_the_workflow_tools(tmp_path):
    async def script(client):
        listed = await client.list_tools()
        return [t.name for t in listed.tools], await client.call_tool("capabilities", {})

    names, result = _session(
        ["--data-dir", str(tmp_path / "d"), "--repository", "acme", "--profile", "default"], script
    )
    assert {"next", "claim", "heartbeat", "result", "status"} <= set(names)
    assert result.structured_content["capability"] == "agentscm.agent-workflow-tasks/v1"


def test_a_revoked_token_cannot_start_a_session(tmp_path):
    import subprocess

    data = tmp_path / "data"
    with TokenAdmin(data, create=True) as admin:
        issued = admin.create(workspace="w", tier=Tier.AGENT)
        admin.revoke(issued.record.token_id)
    token_file = tmp_path / "t"
    token_file.write_text(issued.token)
    done = subprocess.run(
        [AGENT_TASK, "mcp", "--stdio", "--data-dir", str(data), "--token-file", str(token_file)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 4
    assert "TOKEN_REVOKED" in done.stderr


def test_stdio_flag_is_required():
    import subprocess

    done = subprocess.run([AGENT_TASK, "mcp"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
