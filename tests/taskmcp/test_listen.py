"""``subscriptions/listen`` with ``tasksStatus``: ``notifications/tasks/status`` for task handles.

Spoken as the 2026-07-28 streamable HTTP wire carries it (the requests the official SDK
client sends, with the Tasks extension's ``tasksStatus`` key that its ``listen()`` helper does
not offer): the acknowledgement first, naming the task ids agreed to, then a complete
DetailedTask each time a subscribed task changes status.
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from taskcore.events.stream import hub_of

from tests.taskmcp.support import QueueService

PROTOCOL = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


@pytest.fixture
def queue(tmp_path):
    q = QueueService(tmp_path / "data").start()
    hub_of(q.service).poll_s = 0.2
    yield q
    q.stop()


def _listen_body(task_ids: list[str], *, declared: bool = True) -> dict:
    capabilities = {"extensions": {TASKS: {}}} if declared else {}
    return {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"tasksStatus": task_ids},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        },
    }


def _headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "subscriptions/listen",
    }


def test_a_handle_holder_hears_its_tasks_status_change(queue):
    mine = queue.call("member", "agenttask.create", {"verb": "agent.run"})["taskId"]
    foreign = queue.call("other", "agenttask.create", {"verb": "agent.run"})["taskId"]
    frames: list[dict] = []
    acked = threading.Event()
    finished = threading.Event()

    def read() -> None:
        with httpx.stream(
            "POST",
            queue.url + "/mcp",
            content=json.dumps(_listen_body([mine, foreign])),
            headers=_headers(queue.tokens["member"]),
            timeout=30,
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                frames.append(json.loads(line[6:]))
                if frames[-1].get("method") == "notifications/subscriptions/acknowledged":
                    acked.set()
                if frames[-1].get("params", {}).get("status") == "completed":
                    finished.set()
                    return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert acked.wait(20)
    claim = queue.call("worker", "agenttask.claim", {"taskId": mine})
    queue.call("worker", "agenttask.checkpoint", {"taskId": mine, "fence": claim["lease"]["fence"]})
    queue.call(
        "worker",
        "agenttask.checkpoint",
        {"taskId": mine, "fence": claim["lease"]["fence"], "status": "DONE",
         "checkpoint": {"output": {"ok": True}}},
    )  # fmt: skip
    assert finished.wait(30)
    reader.join(10)
    ack, *notes = frames
    meta = {"io.modelcontextprotocol/subscriptionId": "listen-1"}
    assert ack["params"] == {"notifications": {"tasksStatus": [mine]}, "_meta": meta}
    # QUEUED -> LEASED is "working" -> "working": nothing to say; DONE is news.
    assert [n["method"] for n in notes] == ["notifications/tasks/status"]
    done = notes[0]["params"]
    assert (done["taskId"], done["status"], done["_meta"]) == (mine, "completed", meta)
    assert "resultType" not in done
    assert done["result"]["structuredContent"]["status"] == "DONE"


def test_tasks_status_needs_the_extension_declared(queue):
    task_id = queue.call("member", "agenttask.create", {"verb": "agent.run"})["taskId"]
    r = httpx.post(
        queue.url + "/mcp",
        content=json.dumps(_listen_body([task_id], declared=False)),
        headers=_headers(queue.tokens["member"]),
        timeout=30,
    )
    body = r.json() if r.headers["content-type"].startswith("application/json") else None
    if body is None:  # answered on an event stream
        body = json.loads(next(x for x in r.text.splitlines() if x.startswith("data: "))[6:])
    assert body["error"]["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY  # the SDK's: -32021
    assert body["error"]["data"]["requiredCapabilities"]["extensions"] == {TASKS: {}}
