"""The whole worker loop over MCP, with the official SDK client, over streamable HTTP and stdio.

A member queues a task; agent tokens see the worker tools, claim with ``agenttask_claimNext``,
heartbeat, write a phase checkpoint and finish ``DONE`` with output; a second agent racing on
the same task loses with ``CONFLICT``. Over stdio every client is its own ``agent-task mcp
--stdio`` process on one journal file, so the race is between processes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.taskmcp.support import QueueService, body, run

WORKER_TOOLS = {
    "agenttask_claimNext",
    "agenttask_claim",
    "agenttask_checkpoint",
    "agenttask_checkpoint_write",
    "agenttask_release",
    "agenttask_get",
    "agenttask_escalate",
}
ADMIN_ONLY = {"agenttask_list", "agenttask_checkpoint_prune", "agenttask_gate_approve"}


@pytest.fixture
def queue(tmp_path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


Connect = Callable[[str], Client]


def _transports(queue: QueueService, tmp_path: Path) -> dict[str, Connect]:
    return {
        "http": lambda role: queue.http(role),
        "stdio": lambda role: queue.stdio(role, tmp_path),
    }


async def _call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    result = await client.call_tool(tool, args)
    return bool(result.is_error), body(result)


def _create(queue: QueueService, connect: Connect, title: str) -> str:
    async def script(client: Client) -> Any:
        return await _call(
            client, "agenttask_create", {"verb": "agent.run", "payload": {"title": title}}
        )

    failed, created = run(connect("member"), script)
    assert not failed, created
    assert created["status"] == "QUEUED"
    return str(created["taskId"])


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_agent_drains_the_queue_over_mcp(queue, tmp_path, transport):
    connect = _transports(queue, tmp_path)[transport]
    task_id = _create(queue, connect, "fix login")

    async def worker(client: Client) -> dict[str, Any]:
        names = {t.name for t in (await client.list_tools()).tools}
        out: dict[str, Any] = {"names": names}
        _, claimed = await _call(client, "agenttask_claimNext", {})
        out["claimed"] = claimed
        fence = claimed["lease"]["fence"]
        _, out["beat"] = await _call(
            client, "agenttask_checkpoint", {"taskId": task_id, "fence": fence}
        )
        _, out["phase"] = await _call(
            client,
            "agenttask_checkpoint_write",
            {
                "taskId": task_id,
                "phaseKey": "plan",
                "state": {"step": 1},
                "outputs": [],
                "fence": fence,
            },
        )
        _, out["own"] = await _call(client, "agenttask_get", {"taskId": task_id})
        # the second agent races for the task while this one holds it
        async with connect("agent2") as rival:
            out["rival"] = await _call(rival, "agenttask_claim", {"taskId": task_id})
            out["rival_get"] = await _call(rival, "agenttask_get", {"taskId": task_id})
            out["rival_finish"] = await _call(
                rival, "agenttask_checkpoint", {"taskId": task_id, "status": "DONE"}
            )
        _, out["done"] = await _call(
            client,
            "agenttask_checkpoint",
            {
                "taskId": task_id,
                "status": "DONE",
                "checkpoint": {"output": {"patch": "login.diff"}, "rationale": "tests pass"},
                "fence": fence,
            },
        )
        _, out["empty"] = await _call(client, "agenttask_claimNext", {})
        return out

    out = run(connect("agent1"), worker)
    assert out["names"] >= WORKER_TOOLS
    assert not out["names"] & ADMIN_ONLY
    assert "agenttask_create" not in out["names"]  # a member's verb: not offered to an agent
    assert out["claimed"]["claimed"] is True
    assert out["claimed"]["task"]["taskId"] == task_id
    assert out["claimed"]["lease"]["owner"] == queue.token_ids["agent1"]
    assert out["beat"]["status"] == "LEASED"
    assert out["beat"]["lease"]["extensions"] == 1
    assert out["phase"]["phaseIndex"] == 0
    assert out["own"]["lease"]["owner"] == queue.token_ids["agent1"]
    assert out["rival"] == (True, out["rival"][1])
    assert out["rival"][1]["code"] == "CONFLICT"
    assert out["rival_get"][1]["code"] == "NOT_FOUND"  # owner guard: not creator, not holder
    assert out["rival_finish"][1]["code"] == "LEASE_NOT_HELD"
    assert out["done"]["status"] == "DONE"
    assert out["done"]["finishedAtMs"] is not None
    assert out["empty"] == {"claimed": False}

    # the creator reads the result through get and feed
    got = queue.call("member", "agenttask.get", {"taskId": task_id})
    assert got["checkpoint"]["output"] == {"patch": "login.diff"}
    feed = queue.call("member", "agenttask.feed", {"taskId": task_id})
    assert feed["entries"][0]["output"] == {"patch": "login.diff"}
    # audited under the seed's dotted names
    assert queue.service.audit_count(operation="agenttask.claimNext") == 2
    assert queue.service.audit_count(operation="agenttask_claimNext") == 0


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_two_agents_racing_for_one_task_one_wins_the_other_gets_conflict(
    queue, tmp_path, transport
):
    connect = _transports(queue, tmp_path)[transport]
    task_id = _create(queue, connect, "one winner")
    results: dict[str, tuple[bool, Any]] = {}
    ready = anyio.Event()

    async def racer(role: str) -> None:
        async with connect(role) as client:
            await client.list_tools()
            await ready.wait()
            results[role] = await _call(client, "agenttask_claim", {"taskId": task_id})

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(racer, "agent1")
            tg.start_soon(racer, "agent2")
            await anyio.sleep(0.5 if transport == "http" else 3)
            ready.set()

    anyio.run(main)
    outcomes = sorted(results.values(), key=lambda r: r[0])
    (won_failed, won), (lost_failed, lost) = outcomes
    assert not won_failed
    assert won["claimed"] is True
    assert lost_failed
    assert lost["code"] == "CONFLICT"
    holder = queue.call("admin", "agenttask.get", {"taskId": task_id})["lease"]["owner"]
    assert holder == won["lease"]["owner"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_agent_releases_and_another_resumes_from_the_phase(queue, tmp_path, transport):
    connect = _transports(queue, tmp_path)[transport]
    task_id = _create(queue, connect, "hand over")

    async def first(client: Client) -> Any:
        _, claimed = await _call(client, "agenttask_claimNext", {"verb": "agent.run"})
        fence = claimed["lease"]["fence"]
        await _call(
            client,
            "agenttask_checkpoint_write",
            {
                "taskId": task_id,
                "phaseKey": "half",
                "state": {"done": 50},
                "outputs": [1],
                "fence": fence,
            },
        )
        return await _call(client, "agenttask_release", {"taskId": task_id, "fence": fence})

    failed, released = run(connect("agent1"), first)
    assert not failed
    assert released["status"] == "QUEUED"

    async def second(client: Client) -> Any:
        return await _call(client, "agenttask_claimNext", {})

    failed, resumed = run(connect("agent2"), second)
    assert not failed
    assert resumed["resume"]["phaseKey"] == "half"
    assert resumed["resume"]["state"] == {"done": 50}
    assert resumed["lease"]["fence"] == 2
