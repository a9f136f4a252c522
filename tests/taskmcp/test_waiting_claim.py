"""A waiting ``agenttask_claimNext`` over MCP, with the official SDK client (HTTP and stdio).

The tool call waits for a task (``waitMs``), is woken by a create made by another client, and
while it waits sends ``notifications/progress`` to a client that gave a progress token: over
streamable HTTP the answer then comes as an event stream, so the notifications arrive before
it. Each call is audited once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.taskmcp.support import QueueService, body, run


@pytest.fixture
def queue(tmp_path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _connect(queue: QueueService, transport: str, role: str, tmp_path: Path) -> Client:
    return queue.http(role) if transport == "http" else queue.stdio(role, tmp_path)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_waiting_claim_is_woken_by_a_create_from_another_client(queue, tmp_path, transport):
    client = _connect(queue, transport, "agent1", tmp_path)

    async def script(c: Client) -> tuple[Any, float]:
        async def create_soon() -> None:
            await anyio.sleep(1.0)
            await anyio.to_thread.run_sync(
                queue.call, "member", "agenttask.create", {"verb": "agent.run"}
            )

        async with anyio.create_task_group() as group:
            group.start_soon(create_soon)
            started = time.monotonic()
            result = await c.call_tool("agenttask_claimNext", {"waitMs": 20_000})
            took = time.monotonic() - started
        return body(result), took

    answer, took = run(client, script)
    assert answer["claimed"] is True
    assert answer["task"]["status"] == "LEASED"
    assert 0.8 < took < 10.0
    assert queue.service.audit_count(operation="agenttask.claimNext") == 1


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_waiting_claim_reports_progress_then_answers_claimed_false(queue, tmp_path, transport):
    client = _connect(queue, transport, "agent1", tmp_path)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def script(c: Client) -> Any:
        result = await c.call_tool(
            "agenttask_claimNext", {"waitMs": 6_000}, progress_callback=on_progress
        )
        return body(result)

    started = time.monotonic()
    assert run(client, script) == {"claimed": False}
    took = time.monotonic() - started
    assert 5.5 < took < 20.0
    assert seen, "no notifications/progress while the call waited"
    progress, total, message = seen[0]
    assert 4.0 <= progress <= total
    assert total == pytest.approx(6.0, abs=0.5)
    assert message == "waiting for a claimable task"
    assert queue.service.audit_count(operation="agenttask.claimNext") == 1


def test_a_call_without_a_progress_token_is_answered_as_json(queue):
    # Only a call asking for progress is answered as an event stream; everything else keeps
    # the single JSON body (checked on the wire, with a plain HTTP client).
    import httpx

    headers = {
        "Authorization": f"Bearer {queue.tokens['agent1']}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18",
    }
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "agenttask_claimNext", "arguments": {"waitMs": 100}},
    }
    with httpx.Client(base_url=queue.url, timeout=30) as http:
        plain = http.post("/mcp", json=call, headers=headers)
        assert plain.headers["content-type"].startswith("application/json")
        assert '"claimed":false' in plain.json()["result"]["content"][0]["text"]
        call["params"]["_meta"] = {"progressToken": "p1"}
        streamed = http.post("/mcp", json=call, headers=headers)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert '\\"claimed\\":false' in streamed.text
