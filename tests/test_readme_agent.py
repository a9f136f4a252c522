"""The README's "Set up an agent" commands run as written (a fresh HOME, the token file in place)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
AGENT_TASK = str(Path(sys.executable).parent / "agent-task")


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Set up an agent")
    return text[start : text.index("\n## ", start + 1)]


def _setup_commands() -> list[list[str]]:
    [block] = [
        b for b in re.findall(r"```sh\n(.*?)```", _section(), re.DOTALL) if "agent setup" in b
    ]
    lines = block.replace("\\\n", " ").splitlines()
    commands = [shlex.split(line, comments=True) for line in lines]
    return [c for c in commands if c[:3] == ["agent-task", "agent", "setup"]]


def test_one_setup_command_per_harness_writes_what_it_says(tmp_path):
    home = tmp_path / "home"
    token = home / ".config" / "agent-task" / "agent.token"
    token.parent.mkdir(parents=True)
    token.write_text("tok-readme\n")
    commands = _setup_commands()
    assert [c[c.index("--harness") + 1] for c in commands] == ["claude-code", "codex"]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_TASK_", "CLAUDE_", "CODEX_"))
    }
    env["HOME"] = str(home)
    for argv in commands:
        argv = [a.replace("~", str(home)) if a.startswith("~") else a for a in argv]
        done = subprocess.run(
            [AGENT_TASK, *argv[1:]], env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]["agent-task"]
    assert claude["url"] == "http://127.0.0.1:8787/mcp"
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"][
        "agent-task"
    ]
    assert codex["url"] == "http://127.0.0.1:8787/mcp"
    for path in (home / ".claude" / "settings.json", home / ".codex" / "hooks.json"):
        assert set(json.loads(path.read_text())["hooks"]) == {
            "Stop",
            "SubagentStop",
            "SessionStart",
        }
    assert "tok-readme" not in "".join(
        p.read_text() for p in home.rglob("*") if p.is_file() and p != token
    )
