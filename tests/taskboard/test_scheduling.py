"""The board's scheduling views and acts: run-at, attempt, paused verbs, bulk retry/cancel.

Plain HTTP against a served board (as tests/taskboard/test_app.py), on both backends.
"""

from __future__ import annotations

import re

import pytest


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


@pytest.fixture
def world(admin_board):
    """A served board with an admin signed in (tests/taskboard/conftest.py)."""
    return admin_board


def _csrf(client) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/board/queue").text).group(1)


def _failed(service, actor, n: int) -> list[str]:
    ids = []
    for _ in range(n):
        task = service.dispatch(actor, "agenttask.create", {"verb": "agent.run"}).json()
        claim = service.dispatch(actor, "agenttask.claim", {"taskId": task["taskId"]}).json()
        service.dispatch(
            actor,
            "agenttask.checkpoint",
            {"taskId": task["taskId"], "status": "FAILED", "fence": claim["lease"]["fence"]},
        )
        ids.append(task["taskId"])
    return ids


def test_the_queue_shows_run_at_attempt_and_paused_verbs(world):
    service, actor, client = world
    service.dispatch(
        actor, "agenttask.create", {"verb": "agent.run", "delayMs": 60_000, "maxAttempts": 3}
    )
    page = client.get("/board/queue").text
    assert "<th>run at</th><th>attempt</th>" in page
    assert "1/3" in page
    assert "None: every verb" in page
    paused = client.post(
        "/board/queue/pause", data={"csrf": _csrf(client), "act": "pause", "verb": "agent.run"}
    )
    assert paused.status_code == 303
    page = client.get("/board/queue").text
    assert "paused by" in page
    assert "<code>agent.run</code>" in page
    client.post(
        "/board/queue/pause", data={"csrf": _csrf(client), "act": "resume", "verb": "agent.run"}
    )
    assert "None: every verb" in client.get("/board/queue").text


def test_bulk_retry_asks_first_then_requeues_each_audited(world):
    service, actor, client = world
    failed = _failed(service, actor, 3)
    confirm = client.get("/board/queue/bulk", params={"act": "requeue", "status": "FAILED"})
    assert confirm.status_code == 200
    assert "Retry 3 tasks?" in confirm.text
    assert all(t in confirm.text for t in failed)
    statuses = {
        service.dispatch(actor, "agenttask.get", {"taskId": t}).json()["status"] for t in failed
    }
    assert statuses == {"FAILED"}  # the confirmation page changed nothing
    # A POST without the confirmation is sent to the confirmation page.
    unconfirmed = client.post(
        "/board/queue/bulk", data={"csrf": _csrf(client), "act": "requeue", "status": "FAILED"}
    )
    assert unconfirmed.status_code == 303
    assert "/board/queue/bulk?act=requeue" in unconfirmed.headers["location"]
    done = client.post(
        "/board/queue/bulk",
        data={"csrf": _csrf(client), "act": "requeue", "confirm": "requeue", "status": "FAILED"},
    )
    assert done.status_code == 303
    statuses = {
        service.dispatch(actor, "agenttask.get", {"taskId": t}).json()["status"] for t in failed
    }
    assert statuses == {"QUEUED"}
    assert service.audit_count(workspace=actor.workspace, operation="agenttask.requeue") == 3
    assert "3 tasks requeued." in client.get("/board/queue").text


def test_bulk_cancel_needs_the_csrf_token_and_a_known_act(world):
    service, actor, client = world
    service.dispatch(actor, "agenttask.create", {"verb": "agent.run"})
    forged = client.post("/board/queue/bulk", data={"act": "cancel", "confirm": "cancel"})
    assert forged.status_code == 403
    unknown = client.get("/board/queue/bulk", params={"act": "delete"})
    assert unknown.status_code == 422
    confirm = client.get("/board/queue/bulk", params={"act": "cancel"})
    assert "Cancel 1 task?" in confirm.text
    client.post(
        "/board/queue/bulk", data={"csrf": _csrf(client), "act": "cancel", "confirm": "cancel"}
    )
    listed = service.dispatch(actor, "agenttask.list", {"status": "CANCELLED"}).json()
    assert len(listed["tasks"]) == 1


def test_the_task_page_shows_run_at_and_attempts(world):
    service, actor, client = world
    task = service.dispatch(
        actor,
        "agenttask.create",
        {"verb": "agent.run", "delayMs": 1_000, "maxAttempts": 4, "backoff": {"initialMs": 7}},
    ).json()
    page = client.get(f"/board/tasks/{task['taskId']}").text
    assert "<dt>run at</dt>" in page
    assert "1 of 4 (back-off 7 ms" in page
