"""``agenttask`` without the server extra: every command but ``serve`` and ``mcp`` works.

The agent's install is taskcore + click + httpx. The server's packages (taskhttp, taskmcp,
taskboard) and what only they need (starlette, uvicorn, mcp, Jinja2, prometheus-client) come
with ``agenttask[server]``. Two checks, one static and one run: only ``serve_cmd`` and
``mcp_cmd`` import them, and in a process where they cannot be imported (a meta-path finder
refuses them, recording each attempt) every other command runs without trying, while
``serve`` and ``mcp`` exit 2 with one line naming the extra. tests/test_wheels.py does the
same from the built wheels in a venv that really lacks them.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from taskcli.main import _COMMANDS

ROOT = Path(__file__).resolve().parents[2]
TASKCLI = ROOT / "packages" / "taskcli" / "src" / "taskcli"

SERVER_ONLY = (
    "taskhttp",
    "taskmcp",
    "taskboard",
    "starlette",
    "uvicorn",
    "mcp",
    "jinja2",
    "prometheus_client",
    "httptools",
)
"""What ``agenttask[server]`` adds to the agent's install."""

SERVER_COMMANDS = {"serve": "serve_cmd", "mcp": "mcp_cmd"}


@pytest.fixture(autouse=True)
def _both_backends(monkeypatch: pytest.MonkeyPatch) -> str:
    """No journal is opened here: one run, on the default (the package's fixture runs two)."""
    monkeypatch.delenv("AGENT_TASK_DATABASE", raising=False)
    return "sqlite"


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_the_serving_commands_import_a_server_package():
    importers = {
        path.stem: sorted(_imported_roots(path) & set(SERVER_ONLY))
        for path in sorted(TASKCLI.glob("*.py"))
    }
    found = {module: names for module, names in importers.items() if names}
    assert found == {"serve_cmd": ["taskhttp"], "mcp_cmd": ["taskmcp"]}


# A process without the server's packages: each refused import is appended to a file at once
# (the slim Stop-hook path leaves through os._exit), then the CLI runs as the script would.
LEAN = """
import sys
from importlib.abc import MetaPathFinder

BLOCKED, TRIED = set(sys.argv[1].split(",")), sys.argv[2]

class Lean(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            with open(TRIED, "a") as handle:
                handle.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Lean())
sys.argv = ["agent-task", *sys.argv[3:]]
from taskcli.entry import main
main()
"""


def _lean(
    tmp_path: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    tried = tmp_path / "tried.txt"
    tried.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", LEAN, ",".join(SERVER_ONLY), str(tried), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return done, tried.read_text().split() if tried.exists() else []


def test_the_lean_blocker_refuses_and_records_a_server_import(tmp_path):
    done, tried = _lean(tmp_path, "serve", "--port", "0", "--data-dir", str(tmp_path / "d"))
    assert tried == ["taskhttp"]
    assert done.returncode == 2


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_every_command_s_help_imports_no_server_package(tmp_path, command):
    done, tried = _lean(tmp_path, command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.lower().startswith("usage:")  # gate-stop's fast path is argparse
    assert tried == []


def test_the_group_help_and_version_import_no_server_package(tmp_path):
    for args in (["--help"], ["--version"]):
        done, tried = _lean(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert tried == []


@pytest.mark.parametrize("command", sorted(SERVER_COMMANDS))
def test_a_serving_command_without_the_extra_exits_2_with_one_line_naming_it(tmp_path, command):
    args = {"serve": ["--port", "0"], "mcp": ["--stdio"]}[command]
    done, tried = _lean(tmp_path, command, *args, "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"agent-task: '{command}' needs the server extra (")
    assert line.endswith("pip install 'agenttask[server]'")
    assert tried  # it did try, and nothing was opened before it did
    assert not (tmp_path / "data").exists()


def test_call_runs_and_reaches_for_the_service_without_the_server(tmp_path):
    done, tried = _lean(
        tmp_path,
        "call",
        "agenttask.get",
        "--request",
        '{"taskId": "at_1"}',
        "--url",
        "http://127.0.0.1:9",
        env={"AGENT_TASK_TOKEN": "t"},
    )
    assert "SERVICE_UNREACHABLE" in done.stderr, done.stderr
    assert tried == []


def test_the_stop_hooks_run_without_the_server(tmp_path):
    done, tried = _lean(tmp_path, "gate-stop", "--harness", "codex", stdin="{}")
    assert done.returncode == 0, done.stderr
    assert "done gate:" in done.stdout
    assert tried == []


def test_task_stop_and_its_full_hook_run_without_the_server(tmp_path):
    plain = ["c1", "--endpoint", "http://127.0.0.1:9", "--repository", "r", "--profile", "p"]
    plain += ["--token-file", "/nonexistent/t", "--workspace", "/nonexistent/w"]
    done, tried = _lean(tmp_path, "task-stop", *plain, stdin="not json")
    # the slim pass hands an unreadable payload to the full hook, which refuses it
    assert "unreadable Stop payload or counter" in done.stderr
    assert tried == []
