"""``agent setup --oauth`` and ``agent doctor`` of such a setup, against a live service.

The grant is made by the whole ``agent login`` flow (:func:`tests.taskcli.test_agent_login.
logged_in`); setup and doctor run in process with the test's ``HOME``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from taskcli.agent_grant import mcp_call

from tests.taskcli.frontdoor import RealLive, agent_setup, agent_task, agent_world
from tests.taskcli.test_agent_login import _expire, _post, logged_in

AGENT_TASK = str(Path(sys.executable).parent / "agent-task")


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    return module_backend


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = RealLive(tmp_path_factory.mktemp("setup-oauth"))
    yield server
    server.stop()


@pytest.fixture
def world(tmp_path: Path):
    return agent_world(tmp_path, path_tail="/usr/bin:/bin")


def _setup(live, world, *extra: str, harness: str, scope: str = "project"):
    return agent_setup(live, world, "--oauth", *extra, harness=harness, scope=scope)


def test_dry_run_for_codex_writes_the_url_alone_and_hooks_naming_the_grant(live, world):
    home, project, _ = world
    result = _setup(live, world, "--dry-run", harness="codex")
    assert result.exit_code == 0, result.stderr
    diff = result.stdout
    grant = home / ".config" / "agent-task" / "grant.json"
    assert diff.startswith(f"--- /dev/null\n+++ b{project}/.codex/config.toml\n")
    assert f'+[mcp_servers.agent-task]\n+url = "{live.url}/mcp"\n' in diff
    assert "http_headers_helper" not in diff
    assert "bearer" not in diff.lower()
    assert f"session-start --harness codex --url {live.url} --grant-file {grant}" in diff
    assert "gate-stop --harness codex" in diff
    assert not (project / ".codex").exists()


def test_dry_run_for_claude_code_writes_an_http_entry_without_helper(live, world):
    home, project, _ = world
    result = _setup(live, world, "--dry-run", harness="claude-code")
    assert result.exit_code == 0, result.stderr
    diff = result.stdout
    grant = home / ".config" / "agent-task" / "grant.json"
    added = "".join(
        line[1:] + "\n"
        for line in diff.split(f"+++ b{project}/.mcp.json\n", 1)[1].split("--- ", 1)[0].splitlines()
        if line.startswith("+")
    )
    assert json.loads(added) == {
        "mcpServers": {"agent-task": {"type": "http", "url": f"{live.url}/mcp"}}
    }
    assert f"--grant-file {grant}" in diff
    assert "headersHelper" not in diff
    assert not (project / ".mcp.json").exists()


def test_setup_says_to_log_in_first_and_how_to_authorize_the_harness(live, world):
    home, _, _ = world
    result = _setup(live, world, harness="codex", scope="user")
    assert result.exit_code == 0, result.stderr
    grant = home / ".config" / "agent-task" / "grant.json"
    assert (
        f"run 'agent-task agent login --url {live.url} --grant-file {grant}' before "
        "starting the harness"
    ) in result.stdout
    assert "authorize codex itself with 'codex mcp login agent-task'" in result.stdout
    config = (home / ".codex" / "config.toml").read_text()
    assert config == f'[mcp_servers.agent-task]\nurl = "{live.url}/mcp"\n'


def test_setup_refuses_oauth_with_a_token_file_and_a_grant_in_the_tree(live, world):
    _, project, _ = world
    both = _setup(live, world, "--token-file", "/tmp/t", harness="codex")
    assert both.exit_code == 3
    assert "not both" in both.stderr
    inside = _setup(live, world, "--grant-file", str(project / "grant.json"), harness="codex")
    assert inside.exit_code == 3
    assert "--grant-file is inside the work tree" in inside.stderr
    with_stop = _setup(
        live, world, "--change", "c", "--repository", "r", "--profile", "p", harness="codex"
    )
    assert with_stop.exit_code == 3
    assert "task-stop hook reads a token file" in with_stop.stderr
    assert not (project / ".codex").exists()


def test_remove_takes_out_the_oauth_setup(live, world):
    home, _, env = world
    assert _setup(live, world, harness="claude-code", scope="user").exit_code == 0
    removed = agent_task(
        "agent", "setup", "--harness", "claude-code", "--scope", "user", "--remove", env=env
    )
    assert removed.exit_code == 0, removed.stderr
    assert "mcpServers" not in json.loads((home / ".claude.json").read_text())
    settings = (home / ".claude" / "settings.json").read_text()
    assert "agent-task" not in settings


def _doctor(world, *extra: str):
    _, project, env = world
    return agent_task(
        "agent",
        "doctor",
        "--harness",
        "claude-code",
        "--project-dir",
        str(project),
        "--json",
        *extra,
        env=env,
    )


def _checks(result) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_doctor_passes_an_oauth_setup_with_a_live_grant_and_refreshes_it(live, world, tmp_path):
    home, _, _ = world
    grant, decided = logged_in(live, home)
    assert grant == home / "config" / "agent-task" / "grant.json"
    assert (
        _setup(live, world, "--grant-file", str(grant), harness="claude-code", scope="user")
    ).exit_code == 0
    before = json.loads(grant.read_text())
    good = _doctor(world)
    checks = _checks(good)
    assert good.exit_code == 0, checks
    assert checks["grant"]["status"] == "pass"
    assert checks["refresh"]["status"] == "pass"
    assert checks["token"]["detail"].startswith(f"OAuth grant {decided['grantId']}")
    assert "agent tier" in checks["token"]["detail"]
    assert checks["leases"]["detail"] == "agenttask_leases answers: 0 held"
    assert "claude mcp login agent-task" in checks["mcp entry"]["detail"]
    assert checks["secrets"]["status"] == "pass"
    after = json.loads(grant.read_text())
    assert after["refreshToken"] != before["refreshToken"]  # refreshable: it was refreshed


def test_doctor_names_the_login_for_a_missing_a_loose_and_a_revoked_grant(live, world):
    home, _, _ = world
    grant, decided = logged_in(live, home)
    _setup(live, world, "--grant-file", str(grant), harness="claude-code", scope="user")
    grant.chmod(0o644)
    loose = _checks(_doctor(world))
    assert loose["grant"]["status"] == "fail"
    assert "chmod 600" in loose["grant"]["detail"]
    grant.chmod(0o600)
    _post(live, "oauth.grant.revoke", {"grantId": decided["grantId"]}, "admin")
    _expire(grant)
    revoked = _doctor(world)
    assert revoked.exit_code == 9
    checks = _checks(revoked)
    assert checks["refresh"]["status"] == "fail"
    assert "refused to refresh the grant (invalid_grant)" in checks["refresh"]["detail"]
    assert checks["refresh"]["fix"] == (
        f"agent-task agent login --url {live.url} --grant-file {grant}"
    )
    grant.unlink()
    missing = _checks(_doctor(world))
    assert missing["grant"]["status"] == "fail"
    assert missing["grant"]["detail"].startswith(f"no grant at {grant}")


def test_a_grant_approved_above_agent_acts_as_an_agent_the_scope_caps_it(live, world):
    """``agent login`` asks for ``agent-task:read agent-task:write`` only: whatever tier the
    person approves, the hooks' token acts as an agent (the doctor's tier check passes)."""
    home, _, _ = world
    grant, _ = logged_in(live, home, tier="member")
    _setup(live, world, "--grant-file", str(grant), harness="claude-code", scope="user")
    result = _doctor(world)
    checks = _checks(result)
    assert result.exit_code == 0, checks
    assert checks["token"]["status"] == "pass"
    assert "agent tier" in checks["token"]["detail"]


def test_an_access_token_is_still_refused_on_the_http_api(live, world):
    """Why the hook asks over MCP: the service admits access tokens on MCP endpoints only."""
    home, _, _ = world
    grant, _ = logged_in(live, home)
    access = json.loads(grant.read_text())["accessToken"]
    response = httpx.post(
        f"{live.url}/v/agenttask.leases",
        json={},
        headers={"Authorization": f"Bearer {access}"},
        timeout=30,
    )
    assert response.status_code == 401


def _hook(live: RealLive, grant: Path) -> bytes:
    done = subprocess.run(
        [AGENT_TASK, "session-start", "--url", live.url, "--grant-file", str(grant)],
        input=b'{"source": "resume"}',
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    return done.stdout


def test_the_harness_grant_and_the_hooks_grant_are_two_agents(live, world, tmp_path):
    """Without --share-grant a lease the harness's own grant claims is not the hooks' to see."""
    home, _, _ = world
    hooks_grant, _ = logged_in(live, home)
    harness_grant, harness_decided = logged_in(live, tmp_path / "harness")
    created = _post(live, "agenttask.create", {"verb": "agent.run", "payload": {"goal": "two"}})
    access = json.loads(harness_grant.read_text())["accessToken"]
    status, claimed = mcp_call(live.url, access, "agenttask_claimNext")
    assert status == 200
    assert claimed["lease"]["owner"] == harness_decided["grantId"]
    assert _hook(live, hooks_grant) == b""  # silent: the hooks' grant holds nothing
    assert created["taskId"] in _hook(live, harness_grant).decode()
    _post(live, "agenttask.cancel", {"taskId": created["taskId"]})


def test_share_grant_puts_the_grant_in_the_headers_helper(live, world):
    home, project, _ = world
    grant, decided = logged_in(live, home)
    result = _setup(
        live, world, "--grant-file", str(grant), "--share-grant", "--dry-run", harness="claude-code"
    )
    assert result.exit_code == 0, result.stderr
    assert f'"headersHelper": "{AGENT_TASK} agent headers --grant-file {grant}"' in result.stdout
    assert f"session-start --harness claude-code --url {live.url} --grant-file {grant}" in (
        result.stdout
    )
    written = _setup(live, world, "--grant-file", str(grant), "--share-grant", harness="codex")
    assert "the harness and the hooks are one agent" in written.stdout
    assert "codex mcp login" not in written.stdout
    # What the harness sends (the helper's headers, refreshed when stale) claims as the grant,
    # and the SessionStart hook, with the same grant, is told the lease.
    _expire(grant)
    helper = subprocess.run(
        [AGENT_TASK, "agent", "headers", "--grant-file", str(grant)],
        capture_output=True,
        timeout=60,
        check=True,
    )
    bearer = json.loads(helper.stdout)["Authorization"].removeprefix("Bearer ")
    assert bearer == json.loads(grant.read_text())["accessToken"]  # refreshed and kept
    created = _post(live, "agenttask.create", {"verb": "agent.run", "payload": {"goal": "one"}})
    status, claimed = mcp_call(live.url, bearer, "agenttask_claimNext")
    assert status == 200
    assert claimed["lease"]["owner"] == decided["grantId"]
    told = json.loads(_hook(live, grant))["hookSpecificOutput"]["additionalContext"]
    assert f'"taskId": "{created["taskId"]}"' in told
    _post(live, "agenttask.cancel", {"taskId": created["taskId"]})
    checks = {
        c["name"]: c
        for c in json.loads(
            agent_task(
                "agent",
                "doctor",
                "--harness",
                "codex",
                "--project-dir",
                str(project),
                "--json",
                env=world[2],
            ).stdout
        )["checks"]
    }
    assert checks["mcp entry"]["status"] == "pass", checks
    assert "with the hooks' grant (one agent)" in checks["mcp entry"]["detail"]


def test_headers_with_a_missing_grant_fails_with_the_login_line(tmp_path):
    done = subprocess.run(
        [AGENT_TASK, "agent", "headers", "--grant-file", str(tmp_path / "none.json")],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 4
    assert b"agent-task agent login" in done.stderr
