"""install/uninstall: the documented files, idempotent, and removing only what was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from taskcore.donegate.installer import install, settings_path, uninstall
from taskcore.errors import ErrorCode, TaskError

EXE = "/opt/agent task/bin/agent-task"


@pytest.mark.parametrize(
    ("harness", "scope", "rel"),
    [
        ("claude-code", "project", "proj/.claude/settings.json"),
        ("claude-code", "user", "home/.claude/settings.json"),
        ("codex", "project", "proj/.codex/hooks.json"),
        ("codex", "user", "home/.codex/hooks.json"),
    ],
)
def test_writes_the_documented_file(tmp_path: Path, harness: str, scope: str, rel: str) -> None:
    r = install(harness, scope, project_dir=tmp_path / "proj", executable=EXE)
    assert r.path == tmp_path / rel
    assert r.changed
    data = json.loads(r.path.read_text())
    (group,) = data["hooks"]["Stop"]
    (handler,) = group["hooks"]
    assert handler == {
        "type": "command",
        "timeout": 30,
        "command": f"'{EXE}' gate-stop --harness {harness}",
    }


def test_user_scope_follows_the_harness_config_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    assert settings_path("claude-code", "user") == tmp_path / "cc" / "settings.json"
    assert settings_path("codex", "user") == tmp_path / "cx" / "hooks.json"


def test_install_keeps_everything_else_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    other = {"type": "command", "command": "~/bin/notify.sh"}
    path.write_text(
        json.dumps(
            {
                "model": "opus",
                "permissions": {"allow": ["Bash(ls:*)"]},
                "hooks": {
                    "Stop": [{"hooks": [other]}],
                    "PreToolUse": [{"matcher": "Bash", "hooks": [other]}],
                },
            }
        )
    )
    first = install("claude-code", "project", project_dir=tmp_path, executable=EXE, subagent=True)
    second = install("claude-code", "project", project_dir=tmp_path, executable=EXE, subagent=True)
    assert (first.changed, second.changed) == (True, False)
    data = json.loads(path.read_text())
    assert data["model"] == "opus"
    assert data["permissions"] == {"allow": ["Bash(ls:*)"]}
    assert data["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [other]}]
    assert data["hooks"]["Stop"][0] == {"hooks": [other]}
    assert len(data["hooks"]["Stop"]) == 2
    assert data["hooks"]["SubagentStop"][0]["hooks"][0]["command"].endswith(
        "gate-stop --harness claude-code --subagent"
    )


def test_uninstall_removes_only_what_install_wrote(tmp_path: Path) -> None:
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir()
    mine_elsewhere = {"type": "command", "command": "agent-task gate-stop --harness claude-code"}
    other = {"type": "command", "command": "python3 .codex/hooks/check.py", "timeout": 10}
    original = {
        "description": "team hooks",
        "hooks": {"Stop": [{"hooks": [other, mine_elsewhere]}]},
    }
    path.write_text(json.dumps(original))
    install("codex", "project", project_dir=tmp_path, executable=EXE, subagent=True)
    r = uninstall("codex", "project", project_dir=tmp_path)
    assert r.changed
    assert set(r.events) == {"Stop", "SubagentStop"}
    assert json.loads(path.read_text()) == original
    assert not uninstall("codex", "project", project_dir=tmp_path).changed


def test_a_broken_settings_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    for text in ("{not json", "[1, 2]", '{"hooks": []}'):
        path.write_text(text)
        with pytest.raises(TaskError) as err:
            install("claude-code", "project", project_dir=tmp_path, executable=EXE)
        assert err.value.code is ErrorCode.INVALID_VALUE
        assert path.read_text() == text


def test_file_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{}")
    path.chmod(0o600)
    install("claude-code", "project", project_dir=tmp_path, executable=EXE)
    assert path.stat().st_mode & 0o777 == 0o600
