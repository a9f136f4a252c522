import json

import anyio
import pytest
from mcp import Client
from taskcore import Actor, Route, Service, Tier
from taskmcp.server import build_server, fixed_principal
from taskmcp.tools import Family

from tests.taskhttp.fixtures import build_registry

AGENT = Actor(token_id="local", workspace="w1", tier=Tier.AGENT, autonomy=1)
ROUTE = Route(repository="acme/widgets", profile="default")


@pytest.fixture
def service(tmp_path):
    svc = Service.open(tmp_path, registry=build_registry())
    yield svc
    svc.close()


def _run(service, family, route, script, mode="legacy"):
    server = build_server(service, family, fixed_principal(AGENT, route))

    async def main():
        async with Client(server, mode=mode) as client:
            return await script(client)

    return anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_list_and_call_a_queue_tool(service, mode):
    async def script(client):
        listed = await client.list_tools()
        result = await client.call_tool("demo_note", {"key": "a", "text": "hi"})
        return [t.name for t in listed.tools], result

    names, result = _run(service, Family.QUEUE, None, script, mode)
    assert names == ["demo_gate", "demo_note", "demo_read"]
    assert result.is_error is False
    assert result.structured_content == {"key": "a", "text": "hi", "workspace": "w1"}
    assert service.audit_count(operation="demo.note") == 1


def test_refusals_are_tool_errors_carrying_the_code(service):
    async def script(client):
        return [
            await client.call_tool("demo_note", {"key": "a"}),
            await client.call_tool("demo_read", {"key": "missing"}),
            await client.call_tool("demo_destroy", {"key": "a"}),
            await client.call_tool("demo_hidden", {"key": "a"}),
            await client.call_tool("demo_admin", {"key": "a"}),
            await client.call_tool("no_such_tool", {}),
        ]

    results = _run(service, Family.QUEUE, None, script)
    bodies = [json.loads(r.content[0].text) for r in results]
    codes = [b["code"] for b in bodies]
    # hints over MCP point to tools/list, never to the CLI
    assert bodies[3]["error"].endswith("list the tools with tools/list")
    assert (
        bodies[5]["error"] == "there is no tool 'no_such_tool' here; list the tools with tools/list"
    )
    assert not any("agent-task" in b["error"] for b in bodies)
    assert all(r.is_error for r in results)
    assert codes == [
        "MISSING_FIELD",
        "NOT_FOUND",
        "AUTONOMY_EXCEEDED",
        "NOT_FOUND",
        "UNKNOWN_OPERATION",
        "UNKNOWN_OPERATION",
    ]
    assert all(r.structured_content is None for r in results)
    assert service.audit_count() == len(results)


def test_workspace_tools_take_the_route_from_the_principal(service):
    async def script(client):
        return await client.call_tool("echo", {"text": "hi"})

    result = _run(service, Family.WORKSPACE, ROUTE, script)
    assert result.structured_content["result"]["repository"] == "acme/widgets"
    assert result.structured_content["capability"] == "agentscm.agent-workflow-tasks/v1"


def test_workspace_tools_cannot_reach_queue_operations(service):
    async def script(client):
        return await client.call_tool("demo.note", {"key": "a", "text": "x"})

    result = _run(service, Family.WORKSPACE, ROUTE, script)
    assert result.is_error
    assert json.loads(result.content[0].text)["code"] == "INVALID_VALUE"


def test_workspace_tools_without_a_route_are_refused(service):
    async def script(client):
        return await client.call_tool("echo", {"text": "x"})

    result = _run(service, Family.WORKSPACE, None, script)
    assert result.is_error
    assert json.loads(result.content[0].text)["code"] == "BAD_INPUT"
