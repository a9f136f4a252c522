"""``agent-task agent setup --harness codex --oauth``, then the real Codex with nothing else.

The service is the real one on 127.0.0.1 (``QueueService``); consent is the approval operation
with a member's token (what the board's Approve button calls). Each test:

1. ``agent-task agent login`` (the hooks' grant, default path under the test's ``HOME``): the
   printed authorization URL is approved and the person's browser is an HTTP GET of the
   redirect, which lands on the login's loopback listener;
2. ``agent-task agent setup --harness codex --scope user --url URL --oauth [--share-grant]``;
3. the hooks trusted with the lines ``agent doctor`` prints (Codex runs without
   ``--dangerously-bypass-hook-trust``), and ``agent doctor`` then passes;
4. ``codex exec`` against the scripted model.

* ``--oauth``: Codex authorizes itself (``codex mcp login agent-task --no-browser
  --oauth-client-registration dcr``: this machine cannot reach chatgpt.com for Codex's client
  metadata document), lists our tools and claims as its own grant; the SessionStart hook runs
  with the hooks' grant (stale on purpose: the hook refreshes it).
* ``--oauth --share-grant``: no Codex login; Codex connects with the hooks' grant through the
  headers helper, claims as that grant, and the next session is told its task and fence.
  The same with Claude Code (its ``headersHelper``).

Claude Code's own OAuth after ``agent setup --oauth`` (an entry with the URL alone) is not run
here: Claude Code names itself by a client metadata document on claude.ai, which the service
cannot fetch from this machine, and ``agent setup`` writes no pre-registered client (what
``tests/harness/test_mcp_oauth.py`` uses instead).
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.harness.agentsetup import claim_of, doctor, lease_in_context, project, queued
from tests.harness.harnesses import (
    AGENT_TASK,
    claude_env,
    codex_config,
    codex_env,
    run_claude,
    run_codex,
)
from tests.harness.scripted_model import ScriptedModel, ToolCall, Turn, call, say
from tests.harness.test_mcp_oauth import _read_until
from tests.oauth.support import consent_url_of, request_id_of
from tests.taskmcp.support import QueueService

NAMESPACE = "mcp__agent_task"
_AUTHORIZE = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)")


@pytest.fixture
def queue(tmp_path: Path):
    svc = QueueService(tmp_path / "data").start()
    yield svc
    svc.stop()


def _approve(queue: QueueService, authorize: str) -> dict[str, str]:
    request_id = request_id_of(consent_url_of(authorize))
    decided: dict[str, str] = queue.call(
        "member", "oauth.request.approve", {"requestId": request_id, "tier": "agent", "autonomy": 1}
    )
    return decided


def _login(queue: QueueService, env: dict[str, str]) -> tuple[Path, str]:
    """``agent-task agent login --no-browser``, approved; the grant file and its grant id."""
    proc = subprocess.Popen(
        [str(AGENT_TASK), "agent", "login", "--url", queue.url, "--no-browser"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        seen = b""
        found = None
        deadline = time.monotonic() + 60
        while found is None and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                seen += os.read(proc.stderr.fileno(), 65536)
                found = _AUTHORIZE.search(seen.decode())
        assert found is not None, seen
        decided = _approve(queue, found.group(1))
        httpx.get(decided["redirectTo"], timeout=30)  # the browser lands on the listener
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    finally:
        proc.kill()
    grant = Path(env["HOME"]) / ".config" / "agent-task" / "grant.json"
    assert f"the grant is in {grant}" in out.decode()
    return grant, decided["grantId"]


def _setup(
    queue: QueueService, proj: Path, env: dict[str, str], *extra: str, harness: str = "codex"
) -> str:
    done = subprocess.run(
        [
            str(AGENT_TASK),
            "agent",
            "setup",
            "--harness",
            harness,
            "--scope",
            "user",
            "--project-dir",
            str(proj),
            "--url",
            queue.url,
            "--oauth",
            *extra,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _trust_hooks(codex_bin: Path, codex_home: Path, proj: Path, env: dict[str, str]) -> None:
    """Add the ``[hooks.state]`` lines ``agent doctor`` prints; then the doctor passes."""
    status, report = doctor("codex", proj, env, "--codex", str(codex_bin))
    trust = {c["name"]: c for c in report["checks"]}["hook trust"]
    assert status == 9, report
    assert trust["status"] == "fail", report
    with open(codex_home / "config.toml", "a") as config:
        config.write("\n" + trust["fix"].split(":\n", 1)[1] + "\n")
    status, report = doctor("codex", proj, env, "--codex", str(codex_bin))
    assert status == 0, report
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["refresh"]["status"] == "pass"
    assert checks["leases"]["status"] == "pass"


def _codex_login(codex_bin: Path, queue: QueueService, proj: Path, env: dict[str, str]) -> str:
    """Codex's own OAuth (what ``agent setup --oauth`` tells the user to run); its grant id."""
    login = subprocess.Popen(
        [
            str(codex_bin),
            "mcp",
            "login",
            "agent-task",
            "--no-browser",
            "--oauth-client-registration",
            "dcr",
        ],
        cwd=proj,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert login.stdout is not None
        assert login.stdin is not None
        shown = _read_until(login.stdout.fileno(), re.compile(r"Callback URL"))
        authorize = _AUTHORIZE.search(shown)
        assert authorize is not None, shown
        decided = _approve(queue, authorize.group(1))
        login.stdin.write(decided["redirectTo"].encode() + b"\n")
        login.stdin.flush()
        _read_until(login.stdout.fileno(), re.compile(r"Successfully logged in"))
        assert login.wait(timeout=30) == 0
    finally:
        login.kill()
    return decided["grantId"]


def _world(home: Path, model: ScriptedModel, proxy) -> tuple[Path, dict[str, str]]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(model.url))
    return codex_home, codex_env(home, codex_home, proxy.url)


def _stale(grant: Path) -> str:
    data = json.loads(grant.read_text())
    data["expiresAtMs"] = 0
    grant.write_text(json.dumps(data))
    return str(data["refreshToken"])


def test_codex_authorizes_itself_lists_our_tools_and_the_hook_refreshes_its_grant(
    codex_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "claim me over OAuth")
    codex_home, env = _world(home, model, proxy)
    grant, _ = _login(queue, env)
    out = _setup(queue, proj, env)
    assert "authorize codex itself with 'codex mcp login agent-task'" in out
    assert (codex_home / "config.toml").read_text().count("[mcp_servers.agent-task]") == 1
    status, report = doctor("codex", proj, env, "--codex", str(codex_bin))
    before = {c["name"]: c for c in report["checks"]}["codex login"]
    assert status == 9
    assert before["status"] == "fail", before
    assert before["fix"].startswith("codex mcp login agent-task")
    harness_grant = _codex_login(codex_bin, queue, proj, env)
    _trust_hooks(codex_bin, codex_home, proj, env)
    status, report = doctor("codex", proj, env, "--codex", str(codex_bin))
    assert {c["name"]: c for c in report["checks"]}["codex login"]["status"] == "pass"
    spent = _stale(grant)
    model.extend(
        [
            Turn(calls=(ToolCall("agenttask_claimNext", {}, namespace=NAMESPACE),)),
            say("Claimed the task."),
        ]
    )
    result = run_codex(codex_bin, "claim the next task", cwd=proj, env=env, bypass_hook_trust=False)
    assert result.returncode == 0, result.stderr
    assert "agenttask_claimNext" in model.loop_requests[0].namespace(NAMESPACE)
    assert claim_of(model.loop_requests[1])[0] == task_id
    task = queue.call("member", "agenttask.get", {"taskId": task_id})
    assert task["lease"]["owner"] == harness_grant  # Codex's own grant holds it
    # The SessionStart hook ran with the hooks' grant: stale, so it refreshed it, and it said
    # nothing (that grant holds no lease; no failure line either).
    assert json.loads(grant.read_text())["refreshToken"] != spent
    assert "agent-task:" not in model.loop_requests[0].text()


def test_with_share_grant_codex_claims_as_the_grant_and_the_next_session_is_told_its_task(
    codex_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "one agent, one grant")
    codex_home, env = _world(home, model, proxy)
    grant, grant_id = _login(queue, env)
    out = _setup(queue, proj, env, "--share-grant")
    assert "the harness and the hooks are one agent" in out
    _trust_hooks(codex_bin, codex_home, proj, env)
    model.extend(
        [
            Turn(calls=(ToolCall("agenttask_claimNext", {}, namespace=NAMESPACE),)),
            say("Claimed the task."),
        ]
    )
    first = run_codex(codex_bin, "claim the next task", cwd=proj, env=env, bypass_hook_trust=False)
    assert first.returncode == 0, first.stderr
    claimed, fence = claim_of(model.loop_requests[1])
    assert claimed == task_id
    task = queue.call("member", "agenttask.get", {"taskId": task_id})
    assert task["lease"]["owner"] == grant_id  # the hooks' grant: one agent
    _stale(grant)  # the next session's hook and helper refresh it (once, under the lock)
    model.extend([say("I hold my task.")])
    second = run_codex(codex_bin, "what do you hold?", cwd=proj, env=env, bypass_hook_trust=False)
    assert second.returncode == 0, second.stderr
    told = model.loop_requests[-1]
    assert "(this session just started)" in told.text()
    assert lease_in_context(told) == (task_id, fence)


def test_with_share_grant_claude_code_lists_our_tools_claims_and_is_told_its_task(
    claude_bin, model, proxy, home, tmp_path, queue
):
    proj = project(tmp_path)
    task_id = queued(queue, "claude with the grant")
    env = claude_env(home, model.url, proxy.url, {"ENABLE_TOOL_SEARCH": "false"})
    grant, grant_id = _login(queue, env)
    out = _setup(queue, proj, env, "--share-grant", harness="claude-code")
    assert "the harness and the hooks are one agent" in out
    status, report = doctor("claude-code", proj, env)
    assert status == 0, report
    server = "mcp__agent-task__"
    model.extend([call(f"{server}agenttask_claimNext"), say("Claimed the task.")])
    first = run_claude(claude_bin, "claim the next task", cwd=proj, env=env)
    assert first.returncode == 0, first.stderr
    assert f"{server}agenttask_claimNext" in model.loop_requests[0].tool_names
    claimed, fence = claim_of(model.loop_requests[1])
    assert claimed == task_id
    task = queue.call("member", "agenttask.get", {"taskId": task_id})
    assert task["lease"]["owner"] == grant_id
    _stale(grant)
    model.extend([say("I hold my task.")])
    second = run_claude(claude_bin, "what do you hold?", cwd=proj, env=env)
    assert second.returncode == 0, second.stderr
    told = model.loop_requests[-1]
    assert lease_in_context(told) == (task_id, fence)
