"""The official MCP conformance suite against ``agent-task serve`` (npm, pinned; Node 22).

``@modelcontextprotocol/conformance`` runs, for each protocol era the SDK speaks, the server
scenarios that apply to a server like ours (tools, no prompts, resources, sampling or
elicitation) against the real console script, through :class:`BearerProxy` (the scenarios
send no credentials; the proxy adds an agent's bearer token and changes nothing else).
Every check of every scenario must pass, except the ones listed in ``NOT_APPLICABLE`` with
the reason; docs/adapters.md lists the scenarios not run and why.

The authorization-server scenarios run against our authorization server: the metadata
document, and the authorization code grant with PKCE, a client registered for the suite's
loopback callback, consent on the board in Chromium.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.adversarial.served import Served
from tests.ci import in_ci
from tests.harness.install import InstallError, ensure, node22
from tests.oauth.support import consent_in_browser, consent_url_of
from tests.taskmcp.bearer_proxy import BearerProxy

SCENARIOS: dict[str, tuple[str, ...]] = {
    "2025-11-25": (
        "server-initialize",
        "server-session-lifecycle",
        "logging-set-level",
        "ping",
        "tools-list",
        "tools-call-error",
        "dns-rebinding-protection",
    ),
    "2026-07-28": (
        "server-stateless",
        "tools-list",
        "tools-call-error",
        "http-header-validation",
        "caching",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ),
}
"""The server scenarios that apply, per era (``conformance list --server``)."""

NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): (
        "needs the diagnostic tool test_missing_capability; no tool of ours needs a client "
        "capability"
    ),
    ("server-stateless", "sep-2575-missing-capability-http-400"): (
        "needs the diagnostic tool test_missing_capability"
    ),
    ("caching", "sep-2549-prompts-list-caching-hints"): "we serve no prompts (-32601)",
    ("caching", "sep-2549-resources-list-caching-hints"): "we serve no resources (-32601)",
    ("caching", "sep-2549-resources-templates-list-caching-hints"): (
        "we serve no resource templates (-32601)"
    ),
}
"""Checks that test something we do not serve: (scenario, check id) -> why."""

PASSING = {"SUCCESS", "INFO", "SKIPPED"}


@pytest.fixture(autouse=True)
def _both_backends() -> None:
    """One backend is enough: the suite checks the protocol, not the journal."""


@pytest.fixture(scope="module")
def conformance() -> tuple[Path, Path]:
    try:
        return node22(), ensure("conformance").package_dir / "dist" / "index.js"
    except InstallError as err:
        if in_ci():  # the one rule (tests/ci.py): under CI a missing client fails
            raise
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("conformance") / "data")
    yield server
    assert server.stop() == 0


def _suite(conformance, *args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    node, index = conformance
    return subprocess.run(
        [str(node), str(index), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )


def _checks(out: Path) -> list[dict[str, Any]]:
    found = sorted(out.glob("*/checks.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


@pytest.mark.parametrize(
    ("era", "scenario"),
    [(era, scenario) for era, names in SCENARIOS.items() for scenario in names],
)
def test_server_scenario(conformance, served, tmp_path, era, scenario):
    token = served.token("w1")
    with BearerProxy(served.url, token) as url:
        out = tmp_path / "out"
        done = _suite(
            conformance,
            "server",
            "--url",
            url + "/mcp",
            "--scenario",
            scenario,
            "--spec-version",
            era,
            "-o",
            str(out),
            cwd=tmp_path,
        )
    checks = _checks(out)
    assert checks, done.stdout + done.stderr
    failed = [
        (c["id"], c["status"], c.get("errorMessage"))
        for c in checks
        if c["status"] not in PASSING and (scenario, c["id"]) not in NOT_APPLICABLE
    ]
    assert failed == [], done.stdout[-4000:]
    passed = [c["id"] for c in checks if c["status"] == "SUCCESS"]
    assert passed or scenario in ("server-session-lifecycle",), checks


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_authorization_server_metadata_scenario(conformance, served, tmp_path):
    out = tmp_path / "out"
    done = _suite(
        conformance,
        "authorization",
        "--url",
        served.url,
        "--scenario",
        "authorization-server-metadata-endpoint",
        "-o",
        str(out),
        cwd=tmp_path,
    )
    checks = _checks(out)
    assert [c["status"] for c in checks] == ["SUCCESS"] * len(checks), done.stdout[-4000:]


class _Site:
    """What the board consent helper needs of a server: its URL and a person's token."""

    def __init__(self, url: str, person: str) -> None:
        self.url = url
        self.person = person


def test_authorization_code_grant_scenario(conformance, served, tmp_path, page):
    """The suite as a public client: PKCE S256, our consent on the board, the code exchange.

    Both authorization-server scenarios run (the grant reads the metadata the other fetched).

    The client is registered the way the suite asks (a redirect URI on its loopback
    callback listener); the person consents in Chromium; the suite checks the redirect
    (``state``, ``code``, ``iss``), exchanges the code and checks the token response.
    """
    port = _free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    registered = httpx.post(
        served.url + "/register",
        json={
            "client_name": "conformance",
            "redirect_uris": [callback],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        },
        timeout=30,
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    node, index = conformance
    out = tmp_path / "out"
    process = subprocess.Popen(
        [
            str(node),
            str(index),
            "authorization",
            "--url",
            served.url,
            # no --scenario: the grant reads the metadata the metadata scenario fetched
            "--client-id",
            client_id,
            "--resource",
            served.url + "/mcp",
            "--port",
            str(port),
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        assert process.stdout is not None
        authorize = None
        for line in process.stdout:
            if line.startswith(served.url + "/authorize?"):
                authorize = line.strip()
                break
        assert authorize is not None, process.stderr.read() if process.stderr else ""
        person = served.token("w1", tier="member", autonomy=1)
        back = consent_in_browser(
            page, _Site(served.url, person), consent_url_of(authorize), tier="agent"
        )
        assert back.startswith(callback)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    checks = [c for f in sorted(out.glob("*/checks.json")) for c in json.loads(f.read_text())]
    statuses = {c["id"]: c["status"] for c in checks}
    assert statuses.get("authorization-code-grant") == "SUCCESS", stdout[-3000:] + stderr[-2000:]
    assert set(statuses.values()) == {"SUCCESS"}, checks
