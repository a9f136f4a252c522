"""DNS-rebinding protection of the MCP endpoints and the board (``taskmcp.site.check_site``).

A page on a name the attacker controls, resolved to this server's address, reaches it with
``Host: <their name>`` and ``Origin: <their page>``; both are refused with a typed 403 before
authentication. Loopback names, IP literals and the ``--public-url`` host are this server's.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.taskhttp.fixtures import Live

WORKSPACE = "/v1/hub/workspace/mcp?repository=acme%2Fwidgets&profile=default"
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
PUBLIC = "https://tasks.example.com"


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    return module_backend


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = Live(tmp_path_factory.mktemp("rebind")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def public(tmp_path_factory, _both_backends):
    server = Live(tmp_path_factory.mktemp("public"), public_url=PUBLIC).start()
    yield server
    server.stop()


def _mcp(server, path, **headers):
    hdrs = {
        "Authorization": f"Bearer {server.tokens['agent']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        **headers,
    }
    return httpx.post(server.url + path, content=PING, headers=hdrs, timeout=10)


def _port(server):
    return server.url.rsplit(":", 1)[1]


@pytest.mark.parametrize("path", ["/mcp", WORKSPACE])
@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"Host": "evil.example"}, "HOST_NOT_ALLOWED"),
        ({"Host": "evil.example.com:1234"}, "HOST_NOT_ALLOWED"),
        ({"Host": "localhost.evil.example"}, "HOST_NOT_ALLOWED"),
        ({"Origin": "http://evil.example"}, "ORIGIN_NOT_ALLOWED"),
        ({"Origin": "http://192.168.1.9:3000"}, "ORIGIN_NOT_ALLOWED"),
        ({"Host": "evil.example", "Origin": "http://evil.example"}, "HOST_NOT_ALLOWED"),
    ],
)
def test_a_foreign_host_or_origin_is_refused_with_a_typed_403(live, path, headers, code):
    family = "queue" if path == "/mcp" else "workspace"
    before = live.service.audit_count(operation=f"mcp.{family}")
    r = _mcp(live, path, **headers)
    assert r.status_code == 403
    assert r.json()["code"] == code
    assert live.service.audit_count(operation=f"mcp.{family}") == before + 1


def test_rebinding_is_refused_before_authentication(live):
    r = httpx.post(
        live.url + "/mcp",
        content=PING,
        headers={"Host": "evil.example", "Content-Type": "application/json"},
    )
    assert r.status_code == 403
    assert r.json()["code"] == "HOST_NOT_ALLOWED"
    assert "www-authenticate" not in r.headers
    for method in ("GET", "DELETE"):
        r = httpx.request(method, live.url + "/mcp", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "127.0.0.1", "[::1]:{port}"],
)
def test_loopback_hosts_and_origins_are_this_servers(live, host):
    port = _port(live)
    r = _mcp(live, "/mcp", Host=host.format(port=port), Origin=f"http://{host.format(port=port)}")
    assert r.status_code == 200, r.text
    assert r.json()["result"] == {}
    # a loopback page on another port (MCP Inspector's web UI) may call it too
    assert _mcp(live, "/mcp", Origin="http://localhost:6274").status_code == 200


def test_an_ip_literal_host_and_its_own_origin_are_allowed(live):
    # no name was resolved, so nothing was rebound (a server on a LAN address)
    r = _mcp(live, "/mcp", Host="10.1.2.3:8787", Origin="http://10.1.2.3:8787")
    assert r.status_code == 200, r.text


def test_the_public_url_host_is_allowed_and_others_are_not(public):
    ok = _mcp(public, "/mcp", Host="tasks.example.com", Origin=PUBLIC)
    assert ok.status_code == 200, ok.text
    assert _mcp(public, "/mcp", Host="tasks.example.com:443").status_code == 200
    for host in ("tasks.example.com:8443", "other.example.com", "example.com"):
        r = _mcp(public, "/mcp", Host=host)
        assert r.status_code == 403, host
        assert r.json()["code"] == "HOST_NOT_ALLOWED"
    r = _mcp(public, "/mcp", Host="tasks.example.com", Origin="https://evil.example")
    assert r.json()["code"] == "ORIGIN_NOT_ALLOWED"
    # loopback stays this server's (local health checks, the operator on the host)
    assert _mcp(public, "/mcp").status_code == 200


@pytest.mark.parametrize("target", ["/board/", "/board/login"])
def test_the_board_refuses_a_foreign_host_or_origin(live, target):
    r = httpx.get(live.url + target, headers={"Host": "evil.example"})
    assert r.status_code == 403
    assert r.json()["code"] == "HOST_NOT_ALLOWED"
    r = httpx.post(
        live.url + target,
        headers={"Origin": "http://evil.example"},
        data={"token": "x"},
    )
    assert r.status_code == 403
    assert r.json()["code"] == "ORIGIN_NOT_ALLOWED"
    same = httpx.get(live.url + target, headers={"Origin": live.url})
    assert same.status_code in (200, 303, 307), same.text
    # a page served with Referrer-Policy: no-referrer (the board's) posts with Origin: null
    nameless = httpx.get(live.url + target, headers={"Origin": "null"})
    assert nameless.status_code in (200, 303, 307), nameless.text


def test_the_rest_of_the_api_is_not_the_boards_or_mcps_business(live):
    # bearer-only routes have nothing a rebound page could use; health stays answerable
    r = httpx.get(live.url + "/v1/hub/health", headers={"Host": "evil.example"})
    assert r.status_code == 200
