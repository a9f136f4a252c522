"""The board shows queue flow (issue 28): concurrency and unique keys, what a task runs after
and what blocks it, in the queue table and on the task page. Both backends."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from taskboard import SessionStore, create_board
from taskcore import Actor, Service, Tier
from taskcore.auth import issue_token
from taskcore.testing import FakeClock
from taskhttp import BackgroundServer


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


@pytest.fixture
def world(tmp_path):
    """A served board with an admin signed in (as tests/taskboard/test_scheduling.py)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    service = Service.open(tmp_path / "data")
    workspace = f"w{uuid.uuid4().hex[:10]}"
    admin = issue_token(
        service.storage, service.clock, workspace=workspace, tier=Tier.ADMIN, autonomy=3
    )
    sessions = SessionStore(idle_ms=60_000, now_ms=FakeClock(0).now_ms)
    app = Starlette(routes=[Mount("/board", app=create_board(service, sessions=sessions))])
    with BackgroundServer(app) as url:
        client = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
        page = client.get("/board/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        client.post("/board/login", data={"csrf": csrf, "token": admin.token})
        actor = Actor(
            token_id=admin.record.token_id, workspace=workspace, tier=Tier.ADMIN, autonomy=3
        )
        yield service, actor, client
        client.close()
    service.close()


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
