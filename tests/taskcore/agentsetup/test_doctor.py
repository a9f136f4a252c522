"""``agent doctor``: each check passes on a good setup and fails with its fix on a broken one.

The service is a stand-in :class:`Probe` here (the command line's HTTP probe is tested over a
real service in tests/taskcli/test_agent_cmd.py); the files, git and the token are real.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from taskcore.agentsetup.doctor import Check, doctor, failed, render
from taskcore.agentsetup.harness import SetupOptions, TokenFile, hooks_path, mcp_path
from taskcore.agentsetup.plan import plan_setup
from taskcore.errors import ErrorCode, TaskError

URL = "http://127.0.0.1:8787"
TOKEN = "tok-doctor-0123456789"


class FakeService:
    def __init__(self, *, up: bool = True, tier: str = "agent", refuse: str | None = None) -> None:
        self.up, self.tier, self.refuse = up, tier, refuse
        self.calls: list[tuple[str, str, str]] = []

    def health(self, url: str) -> Mapping[str, Any]:
        if not self.up:
            raise TaskError(ErrorCode.SERVICE_UNREACHABLE, "did not answer (ConnectError)")
        return {"status": "ok", "backend": "sqlite"}

    def call(self, url: str, token: str, verb: str) -> Mapping[str, Any]:
        self.calls.append((url, token, verb))
        if token != TOKEN:
            raise TaskError(ErrorCode.UNAUTHENTICATED, "the token is not valid")
        if self.refuse == verb:
            raise TaskError(ErrorCode.UNKNOWN_OPERATION, "no such operation")
        if verb == "observe.whoami":
            return {
                "tokenId": "t1",
                "name": "bot",
                "workspace": "w",
                "tier": self.tier,
                "autonomy": 1,
            }
        return {"nowMs": 1, "leases": [], "more": False}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no codex on it
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(key, raising=False)
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    token = tmp_path / "agent.token"
    token.write_text(TOKEN + "\n")
    exe = tmp_path / "bin" / "agent-task"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return project, token, exe, home


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def _setup(world, harness: str, scope: str) -> None:
    project, token, exe, _ = world
    opts = SetupOptions(
        harness=harness,
        scope=scope,
        url=URL,
        credential=TokenFile(token),
        project_dir=project,
        executable=str(exe),
    )
    for f in plan_setup(opts, _read).changed:
        f.path.parent.mkdir(parents=True, exist_ok=True)
        f.path.write_text(f.after or "")


def _run(world, harness: str, service: FakeService | None = None, **kw: Any) -> dict[str, Check]:
    checks = doctor(harness, project_dir=world[0], read=_read, probe=service or FakeService(), **kw)
    return {c.name: c for c in checks}


def test_a_good_user_setup_passes_every_check(world):
    _setup(world, "claude-code", "user")
    checks = _run(world, "claude-code")
    assert {n: c.status for n, c in checks.items()} == {
        "setup": "pass",
        "service": "pass",
        "token": "pass",
        "leases": "pass",
        "mcp entry": "pass",
        "hook Stop": "pass",
        "hook SubagentStop": "pass",
        "hook SessionStart": "pass",
        "secrets": "pass",
    }
    assert "agent token 'bot' (t1), workspace w, autonomy 1" in checks["token"].detail
    assert not failed(list(checks.values()))


def test_nothing_set_up_fails_with_the_setup_command(world):
    checks = _run(world, "codex", scope="project")
    assert checks["setup"].status == "fail"
    assert (checks["setup"].fix or "").startswith(
        "agent-task agent setup --harness codex --scope project"
    )
    assert checks["hook Stop"].status == "fail"


def test_the_service_down_and_a_refused_token_are_failures_with_fixes(world):
    _setup(world, "codex", "user")
    down = _run(world, "codex", FakeService(up=False))
    assert down["service"].status == "fail"
    assert "agent-task serve" in (down["service"].fix or "")
    world[1].write_text("not-the-token\n")
    refused = _run(world, "codex")
    assert refused["token"].status == "fail"
    assert "agent-task admin token create" in (refused["token"].fix or "")


def test_a_token_above_agent_tier_is_a_warning(world):
    _setup(world, "claude-code", "user")
    checks = _run(world, "claude-code", FakeService(tier="admin"))
    assert checks["token"].status == "warn"
    assert "--tier agent" in (checks["token"].fix or "")
    assert not failed(list(checks.values()))


def test_a_service_without_the_leases_read_fails_that_check(world):
    _setup(world, "claude-code", "user")
    assert (
        _run(world, "claude-code", FakeService(refuse="agenttask.leases"))["leases"].status
        == "fail"
    )


def test_a_missing_hook_and_a_moved_executable_fail(world):
    _setup(world, "claude-code", "user")
    settings = hooks_path("claude-code", "user", world[0])
    data = json.loads(settings.read_text())
    del data["hooks"]["SubagentStop"]
    settings.write_text(json.dumps(data))
    world[2].unlink()
    checks = _run(world, "claude-code")
    assert checks["hook SubagentStop"].status == "fail"
    assert checks["hook Stop"].status == "fail"
    assert "executable is missing" in checks["hook Stop"].detail
    assert checks["mcp entry"].status == "fail"


def test_a_project_setup_in_claude_code_needs_the_folders_trust(world):
    _setup(world, "claude-code", "project")
    checks = _run(world, "claude-code")
    assert checks["setup"].detail.startswith("project scope")
    assert checks["folder trust"].status == "fail"
    assert "hasTrustDialogAccepted" in (checks["folder trust"].fix or "")
    claude_json = mcp_path("claude-code", "user", world[0])
    claude_json.write_text(
        json.dumps({"projects": {str(world[0]): {"hasTrustDialogAccepted": True}}})
    )
    assert _run(world, "claude-code")["folder trust"].status == "pass"


def test_codex_project_trust_is_checked_and_hook_trust_needs_codex(world):
    _setup(world, "codex", "project")
    checks = _run(world, "codex")
    assert checks["project trust"].status == "fail"
    assert f'[projects."{world[0]}"]\ntrust_level = "trusted"' in (
        checks["project trust"].fix or ""
    )
    assert checks["hook trust"].status == "warn"
    config = world[3] / ".codex" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(f'[projects."{world[0]}"]\ntrust_level = "trusted"\n')
    assert _run(world, "codex")["project trust"].status == "pass"


def test_a_token_in_a_tracked_file_fails_and_in_a_harness_file_warns(world):
    project = world[0]
    _setup(world, "claude-code", "user")
    leaked = project / "notes.md"
    leaked.write_text(f"token: {TOKEN}\n")
    subprocess.run(["git", "-C", str(project), "add", "notes.md"], check=True)
    checks = _run(world, "claude-code")
    assert checks["secrets"].status == "fail"
    assert "notes.md" in checks["secrets"].detail
    assert "revoke" in (checks["secrets"].fix or "")
    subprocess.run(["git", "-C", str(project), "rm", "-q", "--cached", "notes.md"], check=True)
    claude_json = mcp_path("claude-code", "user", project)
    data = json.loads(claude_json.read_text())
    data["mcpServers"]["other"] = {"type": "http", "headers": {"Authorization": f"Bearer {TOKEN}"}}
    claude_json.write_text(json.dumps(data))
    assert _run(world, "claude-code")["secrets"].status == "warn"


def test_render_prints_each_check_and_the_fix_under_a_failure(world):
    checks = doctor("codex", project_dir=world[0], read=_read, probe=FakeService())
    text = render("codex", checks)
    assert text.splitlines()[0] == "agent-task agent doctor: codex"
    assert "  fail  setup" in text
    assert "        fix: agent-task agent setup --harness codex" in text
    assert text.splitlines()[-1].startswith("FAIL: ")
