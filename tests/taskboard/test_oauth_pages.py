"""The board's OAuth pages: consent (sign-in returns to it, form-action allows the client's
redirect, approve and deny redirect with code or error) and the grants on the Tokens page."""

from __future__ import annotations

import re

import httpx
import pytest
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskcore.oauth.server import OAuthServer
from taskhttp import BackgroundServer, create_app


@pytest.fixture
def world(tmp_path):
    service = Service.open(tmp_path / "data")
    admin = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.ADMIN, autonomy=2)
    agent = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT, autonomy=1)
    with BackgroundServer(create_app(service)) as url:
        client = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
        yield service, admin.token, agent.token, client, url
        client.close()
    service.close()


def _request(service: Service, url: str, redirect: str = "http://127.0.0.1:9/cb"):
    server = OAuthServer(service)
    client = server.register(
        {"client_name": "<b>Evil</b> Client", "redirect_uris": [redirect]},
        client_id=f"c{len(redirect)}",
        secret=None,
    )
    return server.begin(
        client,
        redirect_uri=redirect,
        explicit=True,
        scopes=None,
        resource=None,
        resources=(url, url + "/mcp"),
        issuer=url,
        code_challenge="c" * 43,
        state="st",
    )


def _sign_in(client: httpx.Client, token: str, next_path: str) -> httpx.Response:
    page = client.get("/board/login", params={"next": next_path})
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    assert f'name="next" value="{next_path}"' in page.text
    return client.post("/board/login", data={"csrf": csrf, "token": token, "next": next_path})


def test_sign_in_returns_to_the_consent_page_which_shows_the_request_escaped(world):
    service, admin, _, client, url = world
    request = _request(service, url)
    path = f"/oauth/{request.request_id}"
    assert _sign_in(client, admin, path).headers["location"] == "/board" + path
    page = client.get("/board" + path)
    assert page.status_code == 200
    assert "&lt;b&gt;Evil&lt;/b&gt; Client" in page.text
    assert "http://127.0.0.1:9/cb" in page.text
    # The approval redirects to the client: the page's form-action allows its origin.
    assert "form-action 'self' http://127.0.0.1:9;" in page.headers["content-security-policy"]
    # At most the person's own tier and autonomy (admin, 2) within the default scope.
    assert re.findall(r'<option value="(\d)"', page.text) == ["0", "1"]


def test_only_a_consent_page_is_a_place_to_return_to(world):
    _, _admin, _, client, _ = world
    page = client.get("/board/login", params={"next": "https://evil.example/"})
    assert 'name="next"' not in page.text


def test_approve_redirects_to_the_client_with_code_state_and_iss(world):
    service, admin, _, client, url = world
    request = _request(service, url)
    _sign_in(client, admin, f"/oauth/{request.request_id}")
    page = client.get(f"/board/oauth/{request.request_id}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    answer = client.post(
        f"/board/oauth/{request.request_id}/approve",
        data={"csrf": csrf, "tier": "agent", "autonomy": "1"},
    )
    assert answer.status_code == 303
    target = httpx.URL(answer.headers["location"])
    assert str(target).startswith("http://127.0.0.1:9/cb?")
    assert target.params["code"].startswith("atc_")
    assert target.params["state"] == "st"
    assert target.params["iss"] == url
    # The grant is on the Tokens page, with a Revoke button that works.
    tokens = client.get("/board/tokens")
    grant = re.search(r'data-grant="(oag_[0-9a-f]{16})"', tokens.text).group(1)
    csrf = re.search(r'name="csrf" value="([^"]+)"', tokens.text).group(1)
    revoked = client.post(f"/board/oauth/grants/{grant}/revoke", data={"csrf": csrf})
    assert revoked.status_code == 303
    assert "revoked" in client.get("/board/tokens").text


def test_deny_redirects_with_access_denied_and_a_post_without_csrf_is_refused(world):
    service, _, agent, client, url = world
    request = _request(service, url, "http://localhost:7/done")
    _sign_in(client, agent, f"/oauth/{request.request_id}")
    refused = client.post(f"/board/oauth/{request.request_id}/deny", data={})
    assert refused.status_code == 403
    page = client.get(f"/board/oauth/{request.request_id}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    denied = client.post(f"/board/oauth/{request.request_id}/deny", data={"csrf": csrf})
    assert denied.status_code == 303
    assert "error=access_denied" in denied.headers["location"]
    assert denied.headers["location"].startswith("http://localhost:7/done?")
