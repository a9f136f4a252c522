"""MCP Tasks backed by the queue: handles that follow the task, survive a restart, obey the rules.

The requester is the official SDK client declaring ``io.modelcontextprotocol/tasks`` (a
``ClientExtension`` with a ``ResultClaim`` for ``resultType: "task"``, see ``support.py``);
workers and operators act through MCP and HTTP like everyone else.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from taskcore.queue.handles import HANDLE_POLL_INTERVAL_MS
from taskmcp.tasks import GATE_META_KEY, TASK_FAILED_CODE, TASKS_EXTENSION

from tests.taskmcp.support import (
    QueueService,
    TasksRequester,
    body,
    cancel_task,
    get_task,
    run,
    update_task,
)


@pytest.fixture
def queue(tmp_path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _requester(queue: QueueService, tmp_path, transport: str, role: str = "member") -> Client:
    ext = [TasksRequester()]
    if transport == "http":
        return queue.http(role, extensions=ext)
    return queue.stdio(role, tmp_path, extensions=ext)


async def _create(client: Client, **payload: Any) -> Any:
    args = {"verb": "agent.run", "payload": payload or {"title": "t"}}
    return await client.session.call_tool("agenttask_create", args, allow_claimed=True)


def _work(queue: QueueService, role: str, verb: str, args: dict[str, Any]) -> Any:
    """A worker's call over MCP (streamable HTTP), as a separate client."""

    async def script(client: Client) -> Any:
        result = await client.call_tool(verb, args)
        assert not result.is_error, body(result)
        return body(result)

    return run(queue.http(role), script)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_handle_follows_its_queue_task_to_completion(queue, tmp_path, transport):
    async def create(client: Client) -> Any:
        assert client.server_capabilities.extensions == {TASKS_EXTENSION: {}}
        handle = await _create(client, title="write the report")
        return handle, await get_task(client.session, handle.task_id)

    handle, first = run(_requester(queue, tmp_path, transport), create)
    assert handle.result_type == "task"
    assert handle.status == "working"
    assert handle.task_id.startswith("at_")
    assert handle.ttl_ms is None
    assert handle.poll_interval_ms == HANDLE_POLL_INTERVAL_MS
    assert handle.created_at.endswith("Z")
    assert (first.status, first.result_type) == ("working", "complete")
    task_id = handle.task_id
    assert queue.call("admin", "agenttask.get", {"taskId": task_id})["status"] == "QUEUED"

    claimed = _work(queue, "worker", "agenttask_claim", {"taskId": task_id})
    fence = claimed["lease"]["fence"]
    poll = lambda: run(  # noqa: E731
        _requester(queue, tmp_path, transport), lambda c: get_task(c.session, task_id)
    )
    assert poll().status == "working"  # LEASED

    _work(
        queue,
        "worker",
        "agenttask_escalate",
        {"taskId": task_id, "fence": fence, "reason": "needs a human look"},
    )
    waiting = poll()
    assert waiting.status == "input_required"
    assert waiting.input_requests == {}
    assert "needs a human look" in waiting.status_message
    gate = waiting.meta[GATE_META_KEY]
    assert (gate["status"], gate["reason"]) == ("PENDING", "needs a human look")

    queue.call("admin", "agenttask.gate.approve", {"gateId": gate["gateId"]})
    assert poll().status == "working"
    fence = _work(queue, "worker", "agenttask_claim", {"taskId": task_id})["lease"]["fence"]
    output = {"report": "all green", "pages": 3}
    _work(
        queue,
        "worker",
        "agenttask_checkpoint",
        {"taskId": task_id, "fence": fence, "status": "DONE", "checkpoint": {"output": output}},
    )
    done = poll()
    assert done.status == "completed"
    assert json.loads(done.result["content"][0]["text"]) == output
    assert done.result["structuredContent"]["status"] == "DONE"
    assert done.result["structuredContent"]["checkpoint"]["output"] == output
    assert done.result.get("isError") in (None, False)
    # every poll is an audited read through the front door
    assert queue.service.audit_count(operation="agenttask.get") >= 5


def test_the_sdk_client_resolves_a_handle_transparently_while_an_agent_works(queue):
    requester = TasksRequester(poll_seconds=0.05)
    results: dict[str, Any] = {}

    async def requester_side() -> None:
        async with queue.http("member", extensions=[requester]) as client:
            args = {"verb": "agent.run", "payload": {"title": "sum"}}
            results["final"] = await client.call_tool("agenttask_create", args)

    async def agent_side() -> None:
        async with queue.http("agent1") as agent:
            for _ in range(200):
                claimed = body(await agent.call_tool("agenttask_claimNext", {}))
                if claimed["claimed"]:
                    break
                await anyio.sleep(0.05)
            # The agent finishes only once the requester has polled the handle (otherwise, on
            # a loaded machine, its first poll could already find the task completed).
            for _ in range(600):
                if requester.seen:
                    break
                await anyio.sleep(0.05)
            await agent.call_tool(
                "agenttask_checkpoint",
                {
                    "taskId": claimed["task"]["taskId"],
                    "status": "DONE",
                    "checkpoint": {"output": {"sum": 42}},
                },
            )

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(requester_side)
            tg.start_soon(agent_side)

    anyio.run(main)
    final = results["final"]
    assert not final.is_error
    assert json.loads(final.content[0].text) == {"sum": 42}
    assert final.structured_content["status"] == "DONE"
    assert requester.seen[0] == "working"
    assert requester.seen[-1] == "completed"


def test_handles_survive_a_restart_of_the_server(queue):
    task_id = run(queue.http("member", extensions=[TasksRequester()]), _create).task_id
    queue.restart()  # the server stops, the journal closes, a new service opens it

    async def poll(client: Client) -> Any:
        return await get_task(client.session, task_id)

    assert run(queue.http("member", extensions=[TasksRequester()]), poll).status == "working"
    claimed = _work(queue, "agent1", "agenttask_claimNext", {})
    assert claimed["task"]["taskId"] == task_id
    _work(
        queue,
        "agent1",
        "agenttask_checkpoint",
        {"taskId": task_id, "status": "DONE", "checkpoint": {"output": "after restart"}},
    )
    queue.restart()
    done = run(queue.http("member", extensions=[TasksRequester()]), poll)
    assert done.status == "completed"
    assert json.loads(done.result["content"][0]["text"]) == "after restart"


def test_a_failed_task_is_a_failed_handle_with_the_error(queue):
    task_id = run(queue.http("member", extensions=[TasksRequester()]), _create).task_id
    _work(queue, "agent1", "agenttask_claim", {"taskId": task_id})
    _work(
        queue,
        "agent1",
        "agenttask_checkpoint",
        {"taskId": task_id, "status": "FAILED", "lastError": "the build broke"},
    )
    state = run(
        queue.http("member", extensions=[TasksRequester()]),
        lambda c: get_task(c.session, task_id),
    )
    assert state.status == "failed"
    assert state.status_message == "the build broke"
    assert state.error["code"] == TASK_FAILED_CODE
    assert state.error["data"] == {
        "taskId": task_id,
        "status": "FAILED",
        "lastError": "the build broke",
    }


def test_tasks_cancel_is_agenttask_cancel_under_the_same_rules(queue):
    task_id = run(queue.http("member", extensions=[TasksRequester()]), _create).task_id

    async def cancel_as(client: Client) -> Any:
        try:
            return await cancel_task(client.session, task_id)
        except MCPError as err:
            return err

    # a member seat with autonomy 1 may not cancel (sensitive needs 2): refused, nothing changes
    refused = run(queue.http("worker", extensions=[TasksRequester()]), cancel_as)
    assert isinstance(refused, MCPError)
    assert refused.code == -32000
    assert refused.error.data["code"] == "AUTONOMY_EXCEEDED"
    # another workspace's task id is not found (invalid params, as the extension says)
    foreign = run(queue.http("other", extensions=[TasksRequester()]), cancel_as)
    assert isinstance(foreign, MCPError)
    assert (foreign.code, foreign.error.data["code"]) == (-32602, "NOT_FOUND")
    assert queue.call("admin", "agenttask.get", {"taskId": task_id})["status"] == "QUEUED"

    acked = run(queue.http("member", extensions=[TasksRequester()]), cancel_as)
    assert not isinstance(acked, MCPError)
    state = run(
        queue.http("member", extensions=[TasksRequester()]),
        lambda c: get_task(c.session, task_id),
    )
    assert state.status == "cancelled"
    assert queue.service.audit_count(operation="agenttask.cancel") == 3
    # cancelling a terminal task is the queue's conflict, never a silent no-op
    again = run(queue.http("member", extensions=[TasksRequester()]), cancel_as)
    assert (again.code, again.error.data["code"]) == (-32000, "ILLEGAL_TRANSITION")


def test_workspace_and_owner_scoping_apply_to_tasks_get(queue):
    task_id = run(queue.http("member", extensions=[TasksRequester()]), _create).task_id

    async def get_as(client: Client) -> Any:
        try:
            return await get_task(client.session, task_id)
        except MCPError as err:
            return err

    for role in ("other", "agent2"):  # another workspace; same workspace, not the owner
        err = run(queue.http(role, extensions=[TasksRequester()]), get_as)
        assert isinstance(err, MCPError)
        assert (err.code, err.error.data["code"]) == (-32602, "NOT_FOUND")
    assert run(queue.http("admin", extensions=[TasksRequester()]), get_as).status == "working"


def test_clients_that_do_not_declare_the_extension_see_todays_behaviour(queue):
    async def plain(client: Client) -> Any:
        created = await client.call_tool("agenttask_create", {"verb": "agent.run"})
        try:
            await get_task(client.session, created.structured_content["taskId"])
        except MCPError as err:
            return created, err
        raise AssertionError("tasks/get answered a client without the extension")

    for mode in ("auto", "legacy"):
        created, err = run(queue.http("member", mode=mode), plain)
        assert not created.is_error
        assert created.structured_content["status"] == "QUEUED"
        if mode == "auto":
            assert err.code == -32021
            assert err.error.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        else:  # a handshake-era wire has no tasks/* at all
            assert err.code == -32601


def test_tasks_update_acknowledges_and_unknown_ids_are_invalid_params(queue):
    task_id = run(queue.http("member", extensions=[TasksRequester()]), _create).task_id

    async def update(client: Client) -> list[Any]:
        out: list[Any] = []
        for tid in (task_id, "at_missing"):
            try:
                out.append(await update_task(client.session, tid, {"k": {"action": "accept"}}))
            except MCPError as err:
                out.append(err)
        return out

    acked, missing = run(queue.http("member", extensions=[TasksRequester()]), update)
    assert not isinstance(acked, MCPError)
    assert isinstance(missing, MCPError)
    assert (missing.code, missing.error.data["code"]) == (-32602, "NOT_FOUND")


def test_a_refused_create_is_an_ordinary_tool_error(queue):
    async def script(client: Client) -> Any:
        return await client.session.call_tool(
            "agenttask_create", {"verb": "no.such.verb"}, allow_claimed=True
        )

    result = run(queue.http("member", extensions=[TasksRequester()]), script)
    assert result.is_error
    assert body(result)["code"] == "INVALID_VALUE"
