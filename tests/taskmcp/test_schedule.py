"""The scheduling fields over MCP (the official SDK client over streamable HTTP).

``agenttask_create`` carries runAt/delayMs/maxAttempts/backoff and every task the tools answer
shows runAtMs/attempt/maxAttempts; the admin verbs (pause, resume, paused, requeueMany,
cancelMany) are not MCP tools, as no admin-only verb is (docs/queue.md).
"""

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


async def _call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    result = await client.call_tool(tool, args)
    return bool(result.is_error), body(result)


def test_create_schedules_and_retries_over_mcp(queue):
    async def member(client: Client) -> Any:
        later = await _call(client, "agenttask_create", {"verb": "agent.run", "delayMs": 3_600_000})
        retrying = await _call(
            client,
            "agenttask_create",
            {"verb": "agent.run", "maxAttempts": 2, "backoff": {"initialMs": 1, "maxMs": 1}},
        )
        both = await _call(
            client, "agenttask_create", {"verb": "agent.run", "runAt": 1, "delayMs": 1}
        )
        return later, retrying, both

    (l_err, later), (r_err, retrying), (b_err, both) = run(queue.http("member"), member)
    assert not l_err
    assert not r_err
    assert later["runAtMs"] - later["createdAtMs"] == 3_600_000
    assert (retrying["attempt"], retrying["maxAttempts"]) == (1, 2)
    assert b_err
    assert both["code"] == "BAD_INPUT"

    async def agent(client: Client) -> Any:
        claimed = await _call(client, "agenttask_claimNext", {})
        failed = await _call(
            client,
            "agenttask_checkpoint",
            {
                "taskId": claimed[1]["task"]["taskId"],
                "status": "FAILED",
                "fence": claimed[1]["lease"]["fence"],
            },
        )
        return claimed, failed

    (_, claimed), (f_err, failed) = run(queue.http("agent1"), agent)
    assert claimed["task"]["taskId"] == retrying["taskId"]  # the scheduled one is not due
    assert not f_err
    assert (failed["status"], failed["attempt"]) == ("QUEUED", 2)


def test_the_scheduling_admin_verbs_are_not_mcp_tools(queue):
    async def tools(client: Client) -> set[str]:
        listed = await client.list_tools()
        return {t.name for t in listed.tools}

    names = run(queue.http("admin"), tools)
    assert "agenttask_create" in names
    assert not names & {
        "agenttask_pause",
        "agenttask_resume",
        "agenttask_paused",
        "agenttask_requeueMany",
        "agenttask_cancelMany",
    }
