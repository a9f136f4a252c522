"""Approval grants end to end: escalate, an operator decides, the grant admits one call.

Over HTTP (``POST /v/<verb>`` with bearer tokens) and over MCP with the official SDK client
(streamable HTTP and ``agent-task mcp --stdio``). The worker is a member seat with autonomy 1:
it may work tasks but not cancel one (``sensitive`` needs 2) until a grant admits that call.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp import Client

from tests.taskmcp.support import QueueService, body, run


@pytest.fixture
def queue(tmp_path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _post(queue: QueueService, role: str, verb: str, payload: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{queue.url}/v/{verb}",
        json=payload,
        headers={"Authorization": f"Bearer {queue.tokens[role]}"},
        timeout=30,
    )


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def test_the_full_grant_loop_over_http(queue):
    victim = _ok(_post(queue, "member", "agenttask.create", {"verb": "agent.run"}))["taskId"]
    task_id = _ok(_post(queue, "member", "agenttask.create", {"verb": "agent.run"}))["taskId"]
    _ok(_post(queue, "worker", "agenttask.claim", {"taskId": task_id}))
    direct = _post(queue, "worker", "agenttask.cancel", {"taskId": victim})
    assert (direct.status_code, direct.json()["code"]) == (403, "AUTONOMY_EXCEEDED")
    escalated = _ok(
        _post(
            queue,
            "worker",
            "agenttask.escalate",
            {
                "taskId": task_id,
                "targetVerb": "agenttask.cancel",
                "targetInput": {"taskId": victim},
                "reason": "duplicate of another task",
            },
        )
    )
    gate_id = escalated["gate"]["gateId"]
    apply = {
        "taskId": task_id,
        "gateId": gate_id,
        "verb": "agenttask.cancel",
        "input": {"taskId": victim},
    }
    # pending: the worker holds no lease (the task is ESCALATED) - and nothing is admitted
    pending = _post(queue, "worker", "agenttask.gate.apply", apply)
    assert (pending.status_code, pending.json()["code"]) == (409, "GRANT_PENDING")
    _ok(_post(queue, "admin", "agenttask.gate.approve", {"gateId": gate_id}))
    claim = _ok(_post(queue, "worker", "agenttask.claim", {"taskId": task_id}))
    assert claim["lease"]["grant"]["gateId"] == gate_id
    applied = _ok(_post(queue, "worker", "agenttask.gate.apply", apply))
    assert applied["result"]["status"] == "CANCELLED"
    assert applied["gate"]["status"] == "CONSUMED"
    second = _post(queue, "worker", "agenttask.gate.apply", apply)
    assert (second.status_code, second.json()["code"]) == (409, "GRANT_CONSUMED")
    other = {**apply, "input": {"taskId": task_id}}
    assert _post(queue, "worker", "agenttask.gate.apply", other).json()["code"] == (
        "GRANT_CONSUMED"
    )
    assert queue.service.audit_count(operation="agenttask.gate.apply") == 4
    done = _ok(
        _post(
            queue,
            "worker",
            "agenttask.checkpoint",
            {"taskId": task_id, "status": "DONE", "checkpoint": {"output": {"cancelled": victim}}},
        )
    )
    assert done["status"] == "DONE"


def test_a_denial_records_its_reason_for_the_creator_over_http(queue):
    task_id = _ok(_post(queue, "member", "agenttask.create", {"verb": "agent.run"}))["taskId"]
    _ok(_post(queue, "worker", "agenttask.claim", {"taskId": task_id}))
    gate_id = _ok(
        _post(
            queue,
            "worker",
            "agenttask.escalate",
            {"taskId": task_id, "targetVerb": "agenttask.cancel", "targetInput": {"taskId": "x"}},
        )
    )["gate"]["gateId"]
    missing = _post(queue, "admin", "agenttask.gate.reject", {"gateId": gate_id})
    assert (missing.status_code, missing.json()["code"]) == (400, "MISSING_FIELD")
    _ok(_post(queue, "admin", "agenttask.gate.reject", {"gateId": gate_id, "note": "not ours"}))
    got = _ok(_post(queue, "member", "agenttask.get", {"taskId": task_id}))
    assert got["status"] == "FAILED"
    assert got["lastError"] == f"approval gate {gate_id} was rejected: not ours"
    entry = _ok(_post(queue, "member", "agenttask.feed", {"taskId": task_id}))["entries"][0]
    assert (entry["gate"]["status"], entry["gate"]["note"]) == ("REJECTED", "not ours")
    _ok(_post(queue, "member", "agenttask.requeue", {"taskId": task_id}))
    _ok(_post(queue, "worker", "agenttask.claim", {"taskId": task_id}))
    apply = {"taskId": task_id, "gateId": gate_id, "verb": "agenttask.cancel", "input": {}}
    denied = _post(queue, "worker", "agenttask.gate.apply", apply)
    assert (denied.status_code, denied.json()["code"]) == (403, "GRANT_DENIED")
    assert "not ours" in denied.json()["error"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_the_full_grant_loop_over_mcp(queue, tmp_path, transport):
    victim = queue.call("member", "agenttask.create", {"verb": "agent.run"})["taskId"]
    task_id = queue.call("member", "agenttask.create", {"verb": "agent.run"})["taskId"]

    def connect() -> Client:
        return queue.http("worker") if transport == "http" else queue.stdio("worker", tmp_path)

    async def escalate(client: Client) -> Any:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"agenttask_escalate", "agenttask_gate_apply"} <= names
        assert "agenttask_cancel" not in names  # beyond this seat's autonomy
        claimed = body(await client.call_tool("agenttask_claim", {"taskId": task_id}))
        direct = await client.call_tool("agenttask_cancel", {"taskId": victim})
        assert direct.is_error
        assert body(direct)["code"] == "AUTONOMY_EXCEEDED"
        return body(
            await client.call_tool(
                "agenttask_escalate",
                {
                    "taskId": task_id,
                    "fence": claimed["lease"]["fence"],
                    "targetVerb": "agenttask.cancel",
                    "targetInput": {"taskId": victim},
                    "reason": "duplicate",
                },
            )
        )

    gate_id = run(connect(), escalate)["gate"]["gateId"]
    # the operator decides over HTTP (admin verbs are not MCP tools)
    queue.call("admin", "agenttask.gate.approve", {"gateId": gate_id})

    async def apply(client: Client) -> Any:
        claimed = body(await client.call_tool("agenttask_claim", {"taskId": task_id}))
        args = {
            "taskId": task_id,
            "gateId": gate_id,
            "verb": "agenttask.cancel",
            "input": {"taskId": victim},
            "fence": claimed["lease"]["fence"],
        }
        first = await client.call_tool("agenttask_gate_apply", args)
        second = await client.call_tool("agenttask_gate_apply", args)
        return claimed, first, second

    claimed, first, second = run(connect(), apply)
    assert claimed["lease"]["grant"]["gateId"] == gate_id
    assert not first.is_error
    assert first.structured_content["result"]["status"] == "CANCELLED"
    assert first.structured_content["gate"]["status"] == "CONSUMED"
    assert second.is_error
    assert body(second)["code"] == "GRANT_CONSUMED"
    assert queue.call("admin", "agenttask.get", {"taskId": victim})["status"] == "CANCELLED"
