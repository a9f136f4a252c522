"""A live service with the board, real tokens in two workspaces, and (for the browser tests)
Debian's Chromium driven by Playwright.

The browser is ``$AGENT_TASK_CHROMIUM`` or ``/usr/bin/chromium``; ``./dev test`` installs
Debian's ``chromium`` package when it is missing and it runs as root. Without a browser the
browser tests are skipped with the command that installs one.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from taskboard import SessionStore, create_board
from taskcore import Actor, Service, Tier
from taskcore.auth import issue_token
from taskcore.testing import FakeClock
from taskhttp import BackgroundServer, create_app

from tests.ci import skip_or_fail

# A registered repository with a collector (a subject page with a real run).
from tests.taskcore.collector.conftest import authority, repo, state

__all__ = ["authority", "repo", "state"]

CHROMIUM = os.environ.get("AGENT_TASK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
INSTALL_HINT = "install Debian's chromium (apt-get install -y chromium) or set AGENT_TASK_CHROMIUM"


class Live:
    """The service on a real socket, with tokens and an HTTP client for the agents' side."""

    def __init__(self, data_dir: Path) -> None:
        self.service = Service.open(data_dir)
        clock = self.service.clock
        storage = self.service.storage  # test setup only; the board never touches storage
        self.admin = issue_token(storage, clock, workspace="ws1", tier=Tier.ADMIN, autonomy=3).token
        self.agent = issue_token(storage, clock, workspace="ws1", tier=Tier.AGENT, autonomy=1).token
        self.member = issue_token(
            storage, clock, workspace="ws1", tier=Tier.MEMBER, autonomy=2
        ).token
        self.admin2 = issue_token(
            storage, clock, workspace="ws2", tier=Tier.ADMIN, autonomy=3
        ).token
        self.server = BackgroundServer(create_app(self.service))
        self.url = self.server.start()
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def call(self, token: str, verb: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.post(
            f"/v/{verb}", json=body or {}, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200, response.text
        return response.json()

    def stop(self) -> None:
        self.http.close()
        self.server.stop()
        self.service.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory, module_backend):
    """One service for a module's tests, on SQLite and on PostgreSQL (``module_backend``)."""
    server = Live(tmp_path_factory.mktemp("board"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        skip_or_fail(f"no browser at {CHROMIUM}: {INSTALL_HINT}")  # fails under CI
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    yield tab
    context.close()


def sign_in(page, live: Live, token: str) -> None:
    page.goto(f"{live.url}/board/login")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/board/queue")


@pytest.fixture
def admin_board(tmp_path):
    """A served board (no browser) with an admin of a fresh workspace signed in.

    Yields ``(service, actor, client)``: the client holds the session cookie.
    """
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
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None
        client.post("/board/login", data={"csrf": found.group(1), "token": admin.token})
        actor = Actor(
            token_id=admin.record.token_id, workspace=workspace, tier=Tier.ADMIN, autonomy=3
        )
        yield service, actor, client
        client.close()
    service.close()
