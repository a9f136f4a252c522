"""``agent login`` (the CLI's own OAuth grant) and what uses it, against a live service.

The service is the real HTTP app on 127.0.0.1 (:class:`tests.taskcli.frontdoor.RealLive`, both
backends); ``agent login`` and ``session-start`` run as the real ``agent-task`` executable.
Consent is given the way the board's Approve button gives it: ``POST /v/oauth.request.approve``
with a member's token; the person's browser is an HTTP GET of the redirect URL, which lands
on the login's loopback listener.
"""

from __future__ import annotations

import json
import os
import re
import select
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from taskcli.agent_grant import mcp_call

from tests.oauth.support import callback_params, consent_url_of, request_id_of
from tests.taskcli.frontdoor import RealLive, agent_task

AGENT_TASK = str(Path(sys.executable).parent / "agent-task")
_AUTHORIZE = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)")


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    return module_backend


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = RealLive(tmp_path_factory.mktemp("login"))
    yield server
    server.stop()


def _post(live: RealLive, verb: str, body: dict[str, Any], role: str = "member") -> Any:
    token = live.token_files[role].read_text().strip()
    response = httpx.post(
        f"{live.url}/v/{verb}",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()


class Login:
    """``agent-task agent login --no-browser`` running; the URL it printed."""

    def __init__(
        self, live: RealLive, grant: Path, *extra: str, stdin: int = subprocess.DEVNULL
    ) -> None:
        self.proc = subprocess.Popen(
            [
                AGENT_TASK,
                "agent",
                "login",
                "--url",
                live.url,
                "--grant-file",
                str(grant),
                "--no-browser",
                "--timeout",
                "60",
                *extra,
            ],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "HOME": str(grant.parent)},
        )
        self.authorize = self._url()

    def _url(self) -> str:
        assert self.proc.stderr is not None
        seen = b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stderr], [], [], 0.5)
            if ready:
                chunk = os.read(self.proc.stderr.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
                found = _AUTHORIZE.search(seen.decode())
                if found:
                    self.shown = seen.decode()
                    return found.group(1)
        raise AssertionError(f"no authorization URL in: {seen!r}")

    def finish(self) -> tuple[int, str, str]:
        """Exit status, stdout and all of stderr (what was read for the URL included)."""
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out.decode(), self.shown + err.decode()


def _approve(live: RealLive, authorize: str, tier: str = "agent") -> dict[str, Any]:
    request_id = request_id_of(consent_url_of(authorize))
    decided: dict[str, Any] = _post(
        live, "oauth.request.approve", {"requestId": request_id, "tier": tier, "autonomy": 1}
    )
    return decided


def _browser_lands(redirect: str) -> httpx.Response:
    """What the person's browser does after consent: follow the redirect to the listener."""
    return httpx.get(redirect, timeout=30)


def logged_in(live: RealLive, tmp_path: Path, tier: str = "agent") -> tuple[Path, dict[str, Any]]:
    """A grant made by the whole flow; the grant file and the approval."""
    grant = tmp_path / "config" / "agent-task" / "grant.json"
    grant.parent.parent.mkdir(parents=True, exist_ok=True)
    login = Login(live, grant)
    decided = _approve(live, login.authorize, tier)
    assert _browser_lands(decided["redirectTo"]).status_code == 200
    code, out, err = login.finish()
    assert code == 0, err
    assert f"logged in: the grant is in {grant}" in out
    return grant, decided


def test_login_runs_the_flow_and_keeps_a_private_grant(live, tmp_path):
    grant_file, decided = logged_in(live, tmp_path)
    assert stat.S_IMODE(grant_file.stat().st_mode) == 0o600
    grant = json.loads(grant_file.read_text())
    assert grant["url"] == live.url
    assert grant["issuer"] == live.url
    assert grant["resource"] == live.url + "/mcp"
    assert grant["accessToken"].startswith("ato_")
    assert grant["refreshToken"].startswith("atr_")
    assert grant["scope"] == "agent-task:read agent-task:write"
    assert grant["expiresAtMs"] > time.time() * 1000 + 50 * 60 * 1000
    # The access token is the grant's, on the MCP endpoint.
    status, who = mcp_call(live.url, grant["accessToken"], "observe_whoami")
    assert status == 200
    assert who["tokenId"] == decided["grantId"]
    assert who["tier"] == "agent"


def test_the_authorization_request_is_pkce_with_state_and_a_loopback_redirect(live, tmp_path):
    login = Login(live, tmp_path / "grant.json")
    try:
        query = callback_params(login.authorize)
        assert query["code_challenge_method"] == "S256"
        assert len(query["code_challenge"]) == 43
        assert len(query["state"]) >= 32
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", query["redirect_uri"])
        assert query["resource"] == live.url + "/mcp"
        assert query["scope"] == "agent-task:read agent-task:write"
    finally:
        login.proc.kill()
        login.proc.wait()


def test_the_redirect_url_may_be_pasted_instead_of_reaching_the_listener(live, tmp_path):
    """A browser on another machine cannot reach this loopback: the person pastes the URL."""
    grant = tmp_path / "grant.json"
    login = Login(live, grant, stdin=subprocess.PIPE)
    decided = _approve(live, login.authorize)
    assert login.proc.stdin is not None
    login.proc.stdin.write(b"http://127.0.0.1:1/elsewhere?code=x&state=y\n")  # not ours: ignored
    login.proc.stdin.write(decided["redirectTo"].encode() + b"\n")
    login.proc.stdin.flush()
    code, out, err = login.finish()
    assert code == 0, err
    assert "paste here the URL" in err
    assert f"logged in: the grant is in {grant}" in out
    assert json.loads(grant.read_text())["refreshToken"].startswith("atr_")


def test_a_redirect_with_another_state_is_refused_and_nothing_is_written(live, tmp_path):
    grant = tmp_path / "grant.json"
    login = Login(live, grant)
    decided = _approve(live, login.authorize)
    forged = re.sub(r"state=[^&]+", "state=forged", decided["redirectTo"])
    assert _browser_lands(forged).status_code == 200  # the listener took the code ...
    code, _, err = login.finish()
    assert code != 0
    assert "state does not match" in err  # ... and the login refused it
    assert not grant.exists()


def test_a_denied_request_ends_the_login_with_the_reason(live, tmp_path):
    grant = tmp_path / "grant.json"
    login = Login(live, grant)
    request_id = request_id_of(consent_url_of(login.authorize))
    denied = _post(live, "oauth.request.deny", {"requestId": request_id})
    assert callback_params(denied["redirectTo"])["error"] == "access_denied"
    assert _browser_lands(denied["redirectTo"]).status_code == 400
    code, _, err = login.finish()
    assert code != 0
    assert "access_denied" in err
    assert not grant.exists()


def test_login_refuses_a_grant_file_inside_a_work_tree(live, tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    result = agent_task(
        "agent", "login", "--url", live.url, "--grant-file", str(tree / "new" / "grant.json")
    )
    assert result.exit_code != 0
    assert "inside the work tree" in result.output + (result.stderr or "")


def _session_start(
    live: RealLive, grant: Path, source: bytes = b"startup"
) -> dict[str, Any] | None:
    done = subprocess.run(
        [
            AGENT_TASK,
            "session-start",
            "--harness",
            "codex",
            "--url",
            live.url,
            "--grant-file",
            str(grant),
        ],
        input=b'{"source": "' + source + b'"}',
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def _expire(grant: Path) -> dict[str, Any]:
    data = json.loads(grant.read_text())
    data["expiresAtMs"] = 0
    grant.write_text(json.dumps(data))
    grant.chmod(0o600)
    return data


def test_session_start_with_the_grant_tells_the_lease_after_a_refresh(live, tmp_path):
    grant, decided = logged_in(live, tmp_path)
    assert _session_start(live, grant) is None  # nothing held: silent
    created = _post(live, "agenttask.create", {"verb": "agent.run", "payload": {"goal": "oauth"}})
    access = json.loads(grant.read_text())["accessToken"]
    status, claimed = mcp_call(live.url, access, "agenttask_claimNext")
    assert status == 200
    assert claimed["claimed"] is True, claimed
    assert claimed["lease"]["owner"] == decided["grantId"]
    task_id, fence = created["taskId"], claimed["lease"]["fence"]
    stale = _expire(grant)
    told = _session_start(live, grant, b"compact")
    assert told is not None, "the hook printed nothing"
    text = told["hookSpecificOutput"]["additionalContext"]
    assert f'agenttask_checkpoint {{"taskId": "{task_id}", "fence": {fence}}}' in text
    renewed = json.loads(grant.read_text())
    assert renewed["refreshToken"] != stale["refreshToken"]  # rotated
    assert renewed["accessToken"] != stale["accessToken"]
    assert renewed["expiresAtMs"] > time.time() * 1000
    assert stat.S_IMODE(grant.stat().st_mode) == 0o600
    _post(live, "agenttask.cancel", {"taskId": task_id})


def test_hooks_starting_together_refresh_once_and_keep_the_grant(live, tmp_path):
    """Six hooks with a stale grant at once: one refreshes, the others read its result.

    Two refreshes with one refresh token would be reuse, which revokes the whole grant.
    """
    grant, _ = logged_in(live, tmp_path)
    _expire(grant)
    procs = [
        subprocess.Popen(
            [AGENT_TASK, "session-start", "--url", live.url, "--grant-file", str(grant)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    time.sleep(1.5)  # all started and waiting on stdin: release them at once
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(b'{"source": "startup"}')
        p.stdin.close()
    outs = [(p.stdout.read(), p.stderr.read()) for p in procs if p.stdout and p.stderr]
    for p in procs:
        p.wait(timeout=60)
    assert [p.returncode for p in procs] == [0] * 6
    assert [o for o, _ in outs] == [b""] * 6, outs  # nothing held, nothing failed
    access = json.loads(grant.read_text())["accessToken"]
    status, who = mcp_call(live.url, access, "observe_whoami")
    assert status == 200  # the grant was not revoked
    assert who["tier"] == "agent"


def test_session_start_with_a_revoked_grant_says_one_line_naming_login(live, tmp_path):
    grant, decided = logged_in(live, tmp_path)
    _post(live, "oauth.grant.revoke", {"grantId": decided["grantId"]}, "admin")
    _expire(grant)
    told = _session_start(live, grant)
    assert told is not None
    assert "refused to refresh the grant" in told["systemMessage"]
    assert "agent-task agent login" in told["systemMessage"]


def test_session_start_without_a_grant_says_one_line(live, tmp_path):
    told = _session_start(live, tmp_path / "none.json")
    assert told is not None
    assert "no grant at" in told["systemMessage"]
    assert "agent-task agent login" in told["systemMessage"]
