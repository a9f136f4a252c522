"""``agent-task gate``: the CLI doors of the done gate, run as the real command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

AGENT_TASK = str(Path(sys.executable).parent / "agent-task")
FIXTURES = Path(__file__).parent.parent / "taskcore" / "donegate" / "fixtures"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_TASK_", "CLAUDE_", "CODEX_"))
    }
    out.update(
        {
            "HOME": str(tmp_path / "home"),
            "AGENT_TASK_GATE_INDEX": str(tmp_path / "idx" / "gate-index.sqlite"),
            "AGENT_TASK_CLAUDE_PROJECTS_DIR": str(tmp_path / "claude" / "projects"),
            "AGENT_TASK_CODEX_SESSIONS_DIR": str(tmp_path / "codex" / "sessions"),
        }
    )
    return out


def cli(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENT_TASK, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=cwd,
    )


def test_gate_json_prints_exactly_the_seeds_object(env: dict[str, str], tmp_path: Path) -> None:
    path = next((tmp_path / "claude").rglob("7b8fa3e8*.jsonl"))
    p = cli(env, "gate", "--transcript", str(path), "--json")
    assert p.returncode == 0, p.stderr
    body = json.loads(p.stdout)
    assert list(body) == [
        "rung",
        "rung_name",
        "below_line",
        "missing",
        "receipt_lines",
        "budget_left",
        "stale",
        "indexed",
    ]
    assert body["rung"] == 2
    assert body["missing"].startswith("`uv run pytest -x` exited 1")


def test_local_user_may_name_any_transcript(env: dict[str, str], tmp_path: Path) -> None:
    src = next((tmp_path / "codex").rglob("*0003*.jsonl"))
    mine = tmp_path / "mine.jsonl"
    mine.write_bytes(src.read_bytes())
    p = cli(env, "gate", "--transcript", str(mine))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("done gate  ● this session is at rung 3 of 5 — verified")


def test_session_and_cwd_selectors(env: dict[str, str]) -> None:
    p = cli(env, "gate", "--session", "019a1c2e-0005-7d3a-9b1e-4f2a6c8e0a05", "--json")
    assert p.returncode == 0
    assert json.loads(p.stdout)["missing"].endswith("has not reported an exit code yet")
    p = cli(env, "gate", "--cwd", "/", "--json")
    assert p.returncode == 5
    assert json.loads(p.stderr)["code"] == "NOT_FOUND"


def test_index_then_reindex_reads_nothing_new(env: dict[str, str]) -> None:
    first = json.loads(cli(env, "gate", "index", "--json").stdout)
    second = json.loads(cli(env, "gate", "index", "--json").stdout)
    assert first["files_read"] == first["index_files"] == 31
    assert first["bytes_read"] > 0
    assert (second["files_read"], second["bytes_read"]) == (0, 0)


def test_stats_tables_with_n(env: dict[str, str]) -> None:
    cli(env, "gate", "index")
    p = cli(env, "gate", "stats")
    assert p.returncode == 0
    assert "adapter" in p.stdout
    assert "claude-code" in p.stdout
    assert "5 of 8 (n<20)" in p.stdout
    data = json.loads(cli(env, "gate", "stats", "--json").stdout)
    assert {r["group"] for r in data["adapter"]} == {"claude-code", "codex"}


def test_install_and_uninstall_round_trip(env: dict[str, str], tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    p = cli(
        env,
        "gate",
        "install",
        "--harness",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(proj),
        "--json",
    )
    assert p.returncode == 0, p.stderr
    settings = json.loads((proj / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command == f"{Path(AGENT_TASK).resolve()} gate-stop --harness claude-code"
    p = cli(
        env,
        "gate",
        "uninstall",
        "--harness",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(proj),
    )
    assert p.returncode == 0
    assert "removed" in p.stdout
    assert json.loads((proj / ".claude" / "settings.json").read_text()) == {}


def test_user_scope_writes_under_home(env: dict[str, str], tmp_path: Path) -> None:
    p = cli(env, "gate", "install", "--harness", "codex", "--scope", "user")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "home" / ".codex" / "hooks.json").is_file()
    assert "trust" in p.stdout
