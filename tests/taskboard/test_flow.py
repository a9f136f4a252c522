"""The board shows queue flow (issue 28): concurrency and unique keys, what a task runs after
and what blocks it, in the queue table and on the task page. Both backends."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


@pytest.fixture
def world(admin_board):
    """A served board with an admin signed in (tests/taskboard/conftest.py)."""
    return admin_board


def test_the_queue_and_the_task_page_show_keys_and_blockers(world):
    service, actor, client = world
    parent = service.dispatch(actor, "agenttask.create", {"verb": "agent.run"}).json()
    body = {
        "verb": "agent.run",
        "after": [parent["taskId"]],
        "concurrencyKey": "repo-a",
        "uniqueKey": "issue-9",
    }
    child = service.dispatch(actor, "agenttask.create", body).json()
    queue = client.get("/board/queue")
    assert queue.status_code == 200
    assert "keys, blockers" in queue.text
    assert "<code>repo-a</code>" in queue.text
    assert "<code>issue-9</code>" in queue.text
    assert f'href="/board/tasks/{parent["taskId"]}"' in queue.text
    page = client.get(f"/board/tasks/{child['taskId']}")
    assert page.status_code == 200
    assert "blocked by" in page.text
    assert "runs after" in page.text
    assert f"<code>{parent['taskId']}</code>" in page.text
    plain = client.get(f"/board/tasks/{parent['taskId']}")
    assert "blocked by" not in plain.text
