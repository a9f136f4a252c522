"""The board over plain HTTP (no browser): headers, CSRF, sessions, live fragments, bounds."""

from __future__ import annotations

import re

import httpx
import pytest
from taskboard import CSP, SessionStore, create_board
from taskcore import Service, Tier
from taskcore.auth import issue_token, revoke_token
from taskcore.testing import FakeClock
from taskhttp import BackgroundServer, create_app


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend


@pytest.fixture
def world(tmp_path):
    service = Service.open(tmp_path / "data")
    admin = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.ADMIN, autonomy=3)
    clock = FakeClock(0)
    sessions = SessionStore(idle_ms=60_000, now_ms=clock.now_ms)
    from starlette.applications import Starlette
    from starlette.routing import Mount

    app = Starlette(routes=[Mount("/board", app=create_board(service, sessions=sessions))])
    with BackgroundServer(app) as url:
        client = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
        yield service, admin, client, clock
        client.close()
    service.close()


def _login(client, token):
    page = client.get("/board/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    return client.post("/board/login", data={"csrf": csrf, "token": token})


def _csrf(client, path="/board/queue"):
    return re.search(r'name="csrf" value="([^"]+)"', client.get(path).text).group(1)


def test_every_page_sends_the_csp_without_inline_script_and_no_store(world):
    _service, admin, client, _ = world
    assert _login(client, admin.token).status_code == 303
    for path in ("/board/login", "/board/queue", "/board/audit", "/board/tokens", "/board/x"):
        response = client.get(path)
        assert response.headers["content-security-policy"] == CSP
        assert "'unsafe-inline'" not in CSP
        assert response.headers["cache-control"] == "no-store"
        assert "<script>" not in response.text  # only <script src=...>


def test_sign_in_needs_the_forms_own_csrf_token(world):
    _service, admin, client, _ = world
    client.get("/board/login")
    refused = client.post("/board/login", data={"csrf": "forged", "token": admin.token})
    assert refused.status_code == 403
    assert "atb_session" not in refused.headers.get("set-cookie", "")


def test_sign_out_needs_the_csrf_token_too(world):
    _service, admin, client, _ = world
    _login(client, admin.token)
    assert client.post("/board/logout", data={}).status_code == 403
    assert client.get("/board/queue").status_code == 200
    assert client.post("/board/logout", data={"csrf": _csrf(client)}).status_code == 303
    assert client.get("/board/queue").headers["location"] == "/board/login"


def test_an_idle_session_expires(world):
    _service, admin, client, clock = world
    _login(client, admin.token)
    assert client.get("/board/queue").status_code == 200
    clock.advance(60_001)
    response = client.get("/board/queue")
    assert response.status_code == 303
    assert response.headers["location"] == "/board/login"


def test_revoking_the_signed_in_token_ends_the_session_on_its_next_page(world):
    service, admin, client, _ = world
    _login(client, admin.token)
    revoke_token(service.storage, service.clock, admin.record.token_id)
    response = client.get("/board/queue")
    assert response.status_code == 303
    assert response.headers["location"] == "/board/login?ended=1"
    assert client.get("/board/queue").headers["location"] == "/board/login"


def test_the_live_fragment_is_the_region_only_and_401_when_signed_out(world):
    _service, admin, client, _ = world
    assert client.get("/board/queue", headers={"X-Board-Live": "1"}).status_code == 401
    _login(client, admin.token)
    fragment = client.get("/board/queue", headers={"X-Board-Live": "1"})
    assert 'id="backlog"' in fragment.text
    assert "<html" not in fragment.text
    assert '<form method="get"' not in fragment.text


def test_a_live_refetch_between_a_form_and_its_redirect_leaves_the_flash(world):
    # The browser met this: the old page's live region re-fetched after the form's POST had
    # set the flash and before the redirect's page load, and the fragment (which shows no
    # flash) used to take it, so the page the operator landed on said nothing.
    service, admin, client, _ = world
    _login(client, admin.token)
    task_id = service.call(admin.token, "agenttask.create", b'{"verb": "agent.run"}').json()[
        "taskId"
    ]
    posted = client.post(
        f"/board/tasks/{task_id}/reorder", data={"csrf": _csrf(client), "priority": "9"}
    )
    assert posted.status_code == 303
    fragment = client.get("/board/queue", headers={"X-Board-Live": "1"})
    assert 'id="backlog"' in fragment.text
    assert "flash" not in fragment.text
    landed = client.get(posted.headers["location"])
    assert f"Task {task_id} now has priority 9." in landed.text
    assert "now has priority" not in client.get("/board/queue").text  # shown once


def test_a_form_body_is_bounded_while_it_is_read(world):
    _service, admin, client, _ = world
    _login(client, admin.token)
    huge = client.post(
        "/board/tokens",
        content=b"csrf=" + b"x" * (70 * 1024),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert huge.status_code == 413


def test_a_core_refusal_is_shown_with_its_status_and_message(world):
    _service, admin, client, _ = world
    _login(client, admin.token)
    response = client.get("/board/subject?repository=nope&seq=1")
    assert response.status_code == 404
    assert "no repository nope in this workspace" in response.text


def test_cookies_are_secure_over_tls_or_when_asked(tmp_path):
    service = Service.open(tmp_path / "data")
    try:
        app = create_app(service, board_secure=True)
        with BackgroundServer(app) as url:
            response = httpx.get(url + "/board/login")
            assert "Secure" in response.headers["set-cookie"]
            assert "HttpOnly" in response.headers["set-cookie"]
    finally:
        service.close()
