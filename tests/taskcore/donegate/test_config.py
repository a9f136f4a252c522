"""Roots, the index location and repository resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskcore.donegate.config import CODEX, GateConfig, harness_of, repository_of


def test_environment_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TASK_GATE_INDEX", str(tmp_path / "i.sqlite"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    cfg = GateConfig.from_env()
    assert cfg.index_path == tmp_path / "i.sqlite"
    assert cfg.claude_root == tmp_path / "cc" / "projects"
    assert cfg.codex_root == tmp_path / "cx" / "sessions"
    monkeypatch.setenv("AGENT_TASK_CODEX_SESSIONS_DIR", str(tmp_path / "x"))
    assert GateConfig.from_env(index_path=tmp_path / "j").codex_root == tmp_path / "x"


def test_default_index_is_under_the_user_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert GateConfig.from_env().index_path == tmp_path / "agent-task" / "gate-index.sqlite"


def test_harness_is_sniffed_outside_the_roots(roots: GateConfig, tmp_path: Path) -> None:
    rollout = next(roots.codex_root.rglob("*.jsonl"))
    copy = tmp_path / "elsewhere.jsonl"
    copy.write_bytes(rollout.read_bytes())
    assert harness_of(copy, roots) == CODEX


def test_repository_is_the_nearest_git_directory(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "deep").mkdir(parents=True)
    assert repository_of(str(tmp_path / "repo" / "src" / "deep")) == str(tmp_path / "repo")
    assert repository_of(str(tmp_path / "nogit")) == str(tmp_path / "nogit")
    assert repository_of("") == ""
