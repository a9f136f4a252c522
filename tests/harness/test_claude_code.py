"""The real Claude Code CLI runs our Stop hooks against the scripted model.

Every test: ``claude -p`` (the pinned version) with its own ``HOME``, pointed at the scripted
model on 127.0.0.1, the deny-all proxy catching anything else. The hooks are installed with our
own commands (``agent-task gate install``, ``agent-task install-stop``), exactly as a user
would, and the assertions read what Claude Code sent the model afterwards.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.conftest import gate_index
from tests.harness.harnesses import AGENT_TASK, claude_env, run_claude
from tests.harness.scripted_model import ScriptedModel, call, say
from tests.taskcli.collector_world import World, git

RECEIPT_HEAD = "this session is at rung 2 of 5 — artifact_changed"
RECEIPT_ASK = "→ could you run the check, or say in one line why there isn't one?"


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    git(proj, "init", "-q", "-b", "main")
    return proj


def _gate_install(proj: Path) -> Path:
    done = subprocess.run(
        [
            str(AGENT_TASK),
            "gate",
            "install",
            "--harness",
            "claude-code",
            "--scope",
            "project",
            "--project-dir",
            str(proj),
        ],
        capture_output=True,
        check=True,
    )
    assert b"settings.json" in done.stdout
    return proj / ".claude" / "settings.json"


def _wrap_hook(settings: Path, shell_before: str = "", shell_after: str = "") -> str:
    """Put shell pipes around the installed hook command (``before | cmd | after``)."""
    data = json.loads(settings.read_text())
    [group] = data["hooks"]["Stop"]
    [handler] = group["hooks"]
    original = handler["command"]
    handler["command"] = " | ".join(p for p in (shell_before, original, shell_after) if p)
    settings.write_text(json.dumps(data))
    return original


def _count(model: ScriptedModel, needle: str) -> list[int]:
    """How often ``needle`` occurs in each loop request (history repeats earlier holds)."""
    return [r.text().count(needle) for r in model.loop_requests]


def test_an_unchecked_edit_is_held_once_with_the_evidence_question(
    claude_bin, model, proxy, home, tmp_path
):
    proj = _project(tmp_path)
    _gate_install(proj)
    model.extend(
        [
            call(
                "Write",
                file_path=str(proj / "calc.py"),
                content="def add(a, b):\n    return a + b\n",
            ),
            say("Done: I added calc.py with add()."),
            say("There is no test suite in this repository yet, so there is nothing to run."),
        ]
    )
    run = run_claude(
        claude_bin, "add calc.py", cwd=proj, env=claude_env(home, model.url, proxy.url)
    )
    assert run.returncode == 0, run.stderr
    result = run.json()
    assert result["is_error"] is False
    assert result["result"].startswith("There is no test suite")
    assert model.overruns == 0, model.overrun_report()
    assert model.played == 3
    # Held once: the receipt comes back in the request after "Done", as Stop hook context.
    assert _count(model, RECEIPT_HEAD) == [0, 0, 1]
    held = model.loop_requests[2].text()
    assert "missing    no test, build, or lint command ran in this session" in held
    assert RECEIPT_ASK in held
    assert "evidence   1 file written   0 test, build or lint commands" in held
    # The hook judged this very session and spent one re-entry of its budget.
    index = gate_index(home)
    try:
        record = index.find_session(result["session_id"])
        assert record is not None
        assert (record.harness, record.rung_name) == ("claude-code", "artifact_changed")
        assert index.budget(record.session_key, f"p{record.prompts}") == (1, False)
    finally:
        index.close()


def test_a_passing_pytest_run_stops_silently(claude_bin, model, proxy, home, tmp_path):
    proj = _project(tmp_path)
    _gate_install(proj)
    model.extend(
        [
            call(
                "Write",
                file_path=str(proj / "calc.py"),
                content="def add(a, b):\n    return a + b\n",
            ),
            call(
                "Write",
                file_path=str(proj / "test_calc.py"),
                content="from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            ),
            call("Bash", command="pytest -q -p no:cacheprovider"),
            say("Done: add() is in calc.py and its test passes."),
        ]
    )
    run = run_claude(
        claude_bin, "add calc.py with a test", cwd=proj, env=claude_env(home, model.url, proxy.url)
    )
    assert run.returncode == 0, run.stderr
    result = run.json()
    assert result["result"] == "Done: add() is in calc.py and its test passes."
    assert model.played == 4
    assert model.overruns == 0, model.overrun_report()
    # pytest really ran, in the agent's shell, and passed.
    assert "1 passed" in model.loop_requests[3].text()
    assert _count(model, "rung ") == [0, 0, 0, 0]
    index = gate_index(home)
    try:
        record = index.find_session(result["session_id"])
        assert record is not None, "the Stop hook did not run"
        assert (record.rung, record.rung_name) == (3, "verified")
        assert index.budget(record.session_key, f"p{record.prompts}") == (0, False)
    finally:
        index.close()


def test_the_budget_of_three_holds_when_the_harness_does_not_flag_the_chain(
    claude_bin, model, proxy, home, tmp_path
):
    """Claude Code marks every stop after a hold ``stop_hook_active: true``, so in one prompt
    the gate holds once. Versions that sent ``false`` on repeated stops existed
    (anthropics/claude-code#54360); a filter in front of the installed hook plays such a
    version, and the gate's own counter must stop after three holds."""
    proj = _project(tmp_path)
    settings = _gate_install(proj)
    forget = f"{shlex.quote(sys.executable)} -c " + shlex.quote(
        "import json,sys; d=json.load(sys.stdin); d['stop_hook_active']=False; "
        "sys.stdout.write(json.dumps(d))"
    )
    out = tmp_path / "hook-stdout.log"
    _wrap_hook(settings, forget, f"tee -a {shlex.quote(str(out))}")
    model.extend(
        [
            call("Write", file_path=str(proj / "calc.py"), content="x = 1\n"),
            say("Done: calc.py is written."),
            say("Done, really."),
            say("Done, it is finished."),
            say("Done. Nothing more to do."),
        ]
    )
    run = run_claude(
        claude_bin, "write calc.py", cwd=proj, env=claude_env(home, model.url, proxy.url)
    )
    assert run.returncode == 0, run.stderr
    assert model.played == 5
    assert model.overruns == 0, model.overrun_report()
    # Three holds, each visible in the next request; the fourth stop is let through.
    assert _count(model, RECEIPT_HEAD) == [0, 0, 1, 2, 3]
    lines = out.read_text().splitlines()
    assert len(lines) == 4
    assert all("additionalContext" in line for line in lines[:3])
    assert json.loads(lines[3])["systemMessage"].splitlines()[0].endswith(RECEIPT_HEAD)
    index = gate_index(home)
    try:
        record = index.find_session(run.json()["session_id"])
        assert record is not None
        assert index.budget(record.session_key, f"p{record.prompts}") == (3, True)
    finally:
        index.close()


def test_a_broken_hook_input_still_lets_the_session_stop(claude_bin, model, proxy, home, tmp_path):
    proj = _project(tmp_path)
    settings = _gate_install(proj)
    out = tmp_path / "hook-stdout.log"
    _wrap_hook(settings, "head -c 17", f"tee -a {shlex.quote(str(out))}")
    model.extend(
        [
            call("Write", file_path=str(proj / "calc.py"), content="x = 1\n"),
            say("Done: calc.py is written."),
        ]
    )
    run = run_claude(
        claude_bin, "write calc.py", cwd=proj, env=claude_env(home, model.url, proxy.url)
    )
    assert run.returncode == 0, run.stderr
    assert run.json()["result"] == "Done: calc.py is written."
    assert model.played == 2
    assert model.overruns == 0, model.overrun_report()
    assert json.loads(out.read_text()) == {
        "systemMessage": "done gate: the Stop payload is not JSON; the stop was allowed"
    }


# -- task-stop --------------------------------------------------------------------------------


@pytest.fixture
def world(tmp_path: Path):
    w = World(tmp_path)
    yield w
    w.close()


def _agent_task(world: World, *args: str) -> subprocess.CompletedProcess[bytes]:
    import os

    env = {**os.environ, **world.env()}
    return subprocess.run([str(AGENT_TASK), *args], env=env, capture_output=True, check=True)


def _install_stop(world: World, home: Path, harness: str, settings: Path) -> None:
    _agent_task(
        world,
        "install-stop",
        "c1",
        "--harness",
        harness,
        "--settings",
        str(settings),
        "--endpoint",
        world.url,
        "--repository",
        "acme",
        "--profile",
        "default",
        "--token-file",
        str(world.token_file),
        "--workspace",
        str(world.repo),
        "--data-dir",
        str(world.data),
    )


def test_task_stop_holds_an_unqualified_change_with_the_next_step(
    claude_bin, model, proxy, home, world
):
    _install_stop(world, home, "claude-code", home / ".claude" / "settings.json")
    _agent_task(world, "checkpoint", "c1", "--workspace", str(world.repo))
    model.extend(
        [
            say("Done: change c1 is finished."),
            call("Bash", command="agent-task collect c1"),
            say("Done: c1 is collected and qualified."),
        ]
    )
    env = claude_env(home, model.url, proxy.url, world.env())
    run = run_claude(claude_bin, "finish change c1", cwd=world.repo, env=env)
    assert run.returncode == 0, run.stderr
    assert run.json()["result"] == "Done: c1 is collected and qualified."
    assert model.played == 3
    assert model.overruns == 0, model.overrun_report()
    held = [r.text() for r in model.loop_requests]
    assert "agent-task: this Change is not done yet." not in held[0]
    assert "agent-task: this Change is not done yet." in held[1]
    assert '"operation": "collector_claim"' in held[1]
    assert "agent-task collect" in held[1]
    # The agent followed the next step for real: collect ran and produced a receipt.
    assert "receipt" in held[2]


def test_task_stop_lets_a_qualified_change_stop(claude_bin, model, proxy, home, world):
    settings = home / ".claude" / "settings.json"
    _install_stop(world, home, "claude-code", settings)
    out = home / "hook-stdout.log"
    _wrap_hook(settings, "", f"tee -a {shlex.quote(str(out))}")
    _agent_task(world, "checkpoint", "c1", "--workspace", str(world.repo))
    _agent_task(world, "collect", "c1")
    model.extend([say("Done: change c1 is finished.")])
    env = claude_env(home, model.url, proxy.url, world.env())
    run = run_claude(claude_bin, "finish change c1", cwd=world.repo, env=env)
    assert run.returncode == 0, run.stderr
    assert run.json()["result"] == "Done: change c1 is finished."
    assert model.played == 1
    assert model.overruns == 0, model.overrun_report()
    assert out.exists(), "the task-stop hook did not run"
    assert out.read_text() == ""  # passed: nothing to say
