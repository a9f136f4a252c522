"""Queue flow over MCP (issue 28): the create fields and ``agenttask_createMany`` as tools."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.taskmcp.support import QueueService, body, run


@pytest.fixture
def queue(tmp_path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def test_create_many_and_the_flow_fields_as_mcp_tools(queue):
    async def script(client: Client) -> Any:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        create = tools["agenttask_create"].input_schema["properties"]
        assert {"uniqueKey", "uniqueFor", "concurrencyKey", "after"} <= set(create)
        assert "agenttask_createMany" in tools
        assert "agenttask_limit_set" not in tools  # admin-only, not an MCP tool
        parent = body(await client.call_tool("agenttask_create", {"verb": "agent.run"}))
        many = await client.call_tool(
            "agenttask_createMany",
            {
                "tasks": [
                    {"verb": "agent.run", "uniqueKey": "u", "after": [parent["taskId"]]},
                    {"verb": "agent.run", "uniqueKey": "u"},
                    {"verb": "agent.run", "concurrencyKey": "repo"},
                ]
            },
        )
        assert not many.is_error
        return parent, body(many)["tasks"]

    parent, (child, again, keyed) = run(queue.http("member"), script)
    assert child["blockedBy"] == [parent["taskId"]]
    assert (again["taskId"], again["deduplicated"]) == (child["taskId"], True)
    assert keyed["concurrencyKey"] == "repo"
    claimed = queue.call("agent1", "agenttask.claimNext", {})
    assert claimed["task"]["taskId"] in {parent["taskId"], keyed["taskId"]}


def test_a_refused_entry_is_a_tool_error_naming_it(queue):
    async def script(client: Client) -> Any:
        return await client.call_tool(
            "agenttask_createMany", {"tasks": [{"verb": "agent.run"}, {"verb": "no.such"}]}
        )

    result = run(queue.http("member"), script)
    assert result.is_error
    assert body(result)["path"] == "$.tasks[1].verb"
    assert queue.call("admin", "agenttask.list", {})["tasks"] == []
