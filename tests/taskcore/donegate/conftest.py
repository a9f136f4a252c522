"""Shared fixtures of the done-gate tests: the checked-in transcripts and an isolated config."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from taskcore.donegate.config import GateConfig

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def expected() -> dict[str, dict[str, Any]]:
    """Every fixture transcript's expected answer, keyed by its path under fixtures/."""
    return json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture
def roots(tmp_path: Path) -> GateConfig:
    """A config over a private copy of the fixture roots and a fresh index."""
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    return GateConfig(
        index_path=tmp_path / "data" / "gate-index.sqlite",
        claude_root=tmp_path / "claude" / "projects",
        codex_root=tmp_path / "codex" / "sessions",
    )


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never read the real ~/.claude, ~/.codex or the user's gate index.

    In process, a Codex rollout is not waited for (its payloads' messages are often not in
    the fixture on purpose: the transcript lags); the hooks run as commands (test_hook's
    ``env_for``) wait as installed, and test_light tests the wait itself.
    """
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_TASK_GATE_ROLLOUT_WAIT_MS", "0")
    for name in (
        "AGENT_TASK_GATE_INDEX",
        "AGENT_TASK_CLAUDE_PROJECTS_DIR",
        "AGENT_TASK_CODEX_SESSIONS_DIR",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "XDG_DATA_HOME",
    ):
        monkeypatch.delenv(name, raising=False)
