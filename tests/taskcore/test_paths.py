"""taskcore.paths: every default location, every documented override, platformdirs' answers."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
import pytest
from taskcore import paths

VARIABLES = (
    "AGENT_TASK_DATA_DIR",
    "AGENT_TASK_GATE_INDEX",
    "AGENT_TASK_COLLECTOR_DIR",
    "AGENT_TASK_STOP_DIR",
    "AGENT_TASK_HARNESS_CACHE",
    "AGENT_TASK_CLAUDE_PROJECTS_DIR",
    "AGENT_TASK_CODEX_SESSIONS_DIR",
    "AGENT_TASK_DSH_SESSIONS_DIR",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
)


@pytest.fixture
def home(tmp_path, monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.mark.parametrize("xdg", [None, "", "   ", "/srv/xdg"])
def test_the_user_dirs_are_platformdirs_answers(home, monkeypatch, xdg):
    if xdg is not None:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert paths.user_data_dir() == platformdirs.user_data_dir("agent-task", appauthor=False)
    assert paths.user_cache_dir() == platformdirs.user_cache_dir("agent-task", appauthor=False)


def test_the_defaults_sit_under_the_user_dirs_and_the_harness_homes(home):
    data = home / ".local" / "share" / "agent-task"
    assert paths.default_data_dir() == data == paths.user_data_root()
    assert paths.gate_index_path() == str(data / "gate-index.sqlite")
    assert paths.collector_state_dir() == data / "collector"
    assert paths.stop_counter_dir() == data / "agent-stop"
    assert paths.harness_cache_dir() == home / ".cache" / "agent-task" / "harness"
    assert paths.claude_projects_dir() == str(home / ".claude" / "projects")
    assert paths.codex_sessions_dir() == str(home / ".codex" / "sessions")
    assert paths.dsh_sessions_dir() is None


def test_every_documented_override_wins_and_expands_the_home(home, monkeypatch):
    overrides = {
        "AGENT_TASK_DATA_DIR": "~/data",
        "AGENT_TASK_GATE_INDEX": "~/i.sqlite",
        "AGENT_TASK_COLLECTOR_DIR": "/c",
        "AGENT_TASK_STOP_DIR": "/s",
        "AGENT_TASK_HARNESS_CACHE": "/h",
        "AGENT_TASK_DSH_SESSIONS_DIR": "/d",
        "CLAUDE_CONFIG_DIR": "~/cc",
        "CODEX_HOME": "/x/codex",
    }
    for name, value in overrides.items():
        monkeypatch.setenv(name, value)
    assert paths.default_data_dir() == home / "data"
    assert paths.gate_index_path() == str(home / "i.sqlite")
    assert paths.gate_index_path("/given") == "/given"
    assert (paths.collector_state_dir(), paths.stop_counter_dir()) == (Path("/c"), Path("/s"))
    assert paths.harness_cache_dir() == Path("/h")
    assert paths.dsh_sessions_dir() == "/d"
    assert paths.claude_projects_dir() == str(home / "cc" / "projects")
    assert paths.codex_sessions_dir() == os.path.join("/x/codex", "sessions")
    monkeypatch.setenv("AGENT_TASK_CLAUDE_PROJECTS_DIR", "/p")
    monkeypatch.setenv("AGENT_TASK_CODEX_SESSIONS_DIR", "/q")
    assert (paths.claude_projects_dir(), paths.codex_sessions_dir()) == ("/p", "/q")


def test_importing_paths_loads_neither_platformdirs_nor_pathlib():
    import subprocess
    import sys

    probe = (
        "import sys; import taskcore.paths as p; p.gate_index_path(); p.user_data_dir();"
        "print([m for m in ('platformdirs', 'pathlib', 'typing') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
