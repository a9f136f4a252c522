"""The real Codex CLI runs our Stop hooks against the scripted model (Responses API).

``codex exec --json`` (the pinned version) with its own ``CODEX_HOME`` holding a custom
provider on 127.0.0.1, the deny-all proxy catching anything else. The hooks are installed with
our own commands into Codex's ``hooks.json``; ``--dangerously-bypass-hook-trust`` stands in for
the user's one-time review in ``/hooks`` (Codex silently skips an unreviewed hook). Each hook
command is wrapped with ``tee`` so a test also sees the exact Stop input Codex sent.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.conftest import gate_index
from tests.harness.harnesses import AGENT_TASK, VENV_BIN, codex_config, codex_env, run_codex
from tests.harness.scripted_model import ScriptedModel, call, say
from tests.taskcli.collector_world import World, git

RECEIPT_HEAD = "this session is at rung 2 of 5 — artifact_changed"
RECEIPT_ASK = "→ could you run the check, or say in one line why there isn't one?"


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    git(proj, "init", "-q", "-b", "main")
    return proj


def _codex_home(home: Path, model: ScriptedModel, *trusted: Path) -> Path:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(model.url, trusted=trusted))
    return codex_home


def _gate_install(proj: Path) -> Path:
    subprocess.run(
        [
            str(AGENT_TASK),
            "gate",
            "install",
            "--harness",
            "codex",
            "--scope",
            "project",
            "--project-dir",
            str(proj),
        ],
        capture_output=True,
        check=True,
    )
    return proj / ".codex" / "hooks.json"


def _spy(hooks: Path, log_dir: Path, before: str = "") -> tuple[Path, Path]:
    """Wrap the installed Stop command: ``tee stdin.log | [before |] cmd | tee stdout.log``."""
    stdin_log, stdout_log = log_dir / "hook-stdin.log", log_dir / "hook-stdout.log"
    data = json.loads(hooks.read_text())
    [group] = data["hooks"]["Stop"]
    [handler] = group["hooks"]
    parts = [f"tee -a {shlex.quote(str(stdin_log))}", before, handler["command"]]
    parts.append(f"tee -a {shlex.quote(str(stdout_log))}")
    handler["command"] = " | ".join(p for p in parts if p)
    hooks.write_text(json.dumps(data))
    return stdin_log, stdout_log


def _inputs(stdin_log: Path) -> list[dict]:
    """The Stop inputs Codex sent (concatenated JSON objects, one per stop)."""
    decoder, text, out, pos = json.JSONDecoder(), stdin_log.read_text(), [], 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            break
        obj, pos = decoder.raw_decode(text, pos)
        out.append(obj)
    return out


def _count(model: ScriptedModel, needle: str) -> list[int]:
    return [r.text().count(needle) for r in model.loop_requests]


def _messages(run) -> list[str]:
    return [
        e["item"]["text"]
        for e in run.events()
        if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
    ]


def test_an_unchecked_edit_is_held_once_with_decision_block(
    codex_bin, model, proxy, home, tmp_path
):
    proj = _project(tmp_path)
    stdin_log, stdout_log = _spy(_gate_install(proj), tmp_path)
    codex_home = _codex_home(home, model, proj)
    model.extend(
        [
            call("exec_command", cmd="printf 'def add(a, b):\\n    return a + b\\n' > calc.py"),
            say("Done: I added calc.py with add()."),
            say("There is no test suite in this repository yet, so there is nothing to run."),
        ]
    )
    run = run_codex(codex_bin, "add calc.py", cwd=proj, env=codex_env(home, codex_home, proxy.url))
    assert run.returncode == 0, run.stderr
    assert model.played == 3
    assert model.overruns == 0, model.overrun_report()
    assert _messages(run)[-1].startswith("There is no test suite")
    # The tools Codex offers the model include its shell.
    assert "exec_command" in model.loop_requests[0].tool_names
    assert _count(model, RECEIPT_HEAD) == [0, 0, 1]
    assert RECEIPT_ASK in model.loop_requests[2].text()
    # Codex's own Stop input: a rollout path, and stop_hook_active set on the stop after a hold.
    first, second = _inputs(stdin_log)
    assert first["hook_event_name"] == "Stop"
    assert first["stop_hook_active"] is False
    assert second["stop_hook_active"] is True
    assert Path(first["transcript_path"]).name.startswith("rollout-")
    assert first["last_assistant_message"] == "Done: I added calc.py with add()."
    outputs = stdout_log.read_text().splitlines()
    assert len(outputs) == 1  # the second stop printed nothing: allowed
    held = json.loads(outputs[0])
    assert held["decision"] == "block"
    assert held["reason"].splitlines()[0].endswith(RECEIPT_HEAD)
    index = gate_index(home)
    try:
        record = index.find_session(first["session_id"])
        assert record is not None
        assert (record.harness, record.rung_name) == ("codex", "artifact_changed")
        assert index.budget(record.session_key, f"p{record.prompts}") == (1, False)
    finally:
        index.close()


def test_a_passing_pytest_run_stops_silently(codex_bin, model, proxy, home, tmp_path):
    proj = _project(tmp_path)
    stdin_log, stdout_log = _spy(_gate_install(proj), tmp_path)
    codex_home = _codex_home(home, model, proj)
    model.extend(
        [
            call("exec_command", cmd="printf 'def add(a, b):\\n    return a + b\\n' > calc.py"),
            call(
                "exec_command",
                cmd="printf 'from calc import add\\n\\ndef test_add():\\n    assert add(2, 3) == 5\\n'"
                " > test_calc.py",
            ),
            # Codex runs commands in a login shell (``bash -lc``), whose profile resets PATH.
            call("exec_command", cmd=f"{VENV_BIN / 'pytest'} -q -p no:cacheprovider"),
            say("Done: add() is in calc.py and its test passes."),
        ]
    )
    run = run_codex(codex_bin, "add calc.py", cwd=proj, env=codex_env(home, codex_home, proxy.url))
    assert run.returncode == 0, run.stderr
    assert model.played == 4
    assert model.overruns == 0, model.overrun_report()
    assert "1 passed" in model.loop_requests[3].text()
    assert _count(model, "rung ") == [0, 0, 0, 0]
    [stop] = _inputs(stdin_log)
    assert stdout_log.read_text() == ""
    index = gate_index(home)
    try:
        record = index.find_session(stop["session_id"])
        assert record is not None
        assert (record.rung, record.rung_name) == (3, "verified")
    finally:
        index.close()


def test_the_budget_of_three_holds_when_the_harness_does_not_flag_the_chain(
    codex_bin, model, proxy, home, tmp_path
):
    """Codex sets ``stop_hook_active`` after a block; a filter that clears it plays a harness
    that does not, and the gate's own counter must stop after three holds."""
    proj = _project(tmp_path)
    forget = f"{shlex.quote(sys.executable)} -c " + shlex.quote(
        "import json,sys; d=json.load(sys.stdin); d['stop_hook_active']=False; "
        "sys.stdout.write(json.dumps(d))"
    )
    _stdin_log, stdout_log = _spy(_gate_install(proj), tmp_path, before=forget)
    codex_home = _codex_home(home, model, proj)
    model.extend(
        [
            call("exec_command", cmd="printf 'x = 1\\n' > calc.py"),
            say("Done: calc.py is written."),
            say("Done, really."),
            say("Done, it is finished."),
            say("Done. Nothing more to do."),
        ]
    )
    run = run_codex(
        codex_bin, "write calc.py", cwd=proj, env=codex_env(home, codex_home, proxy.url)
    )
    assert run.returncode == 0, run.stderr
    assert model.played == 5
    assert model.overruns == 0, model.overrun_report()
    assert _count(model, RECEIPT_HEAD) == [0, 0, 1, 2, 3]
    outputs = [json.loads(line) for line in stdout_log.read_text().splitlines()]
    assert [o.get("decision") for o in outputs] == ["block", "block", "block", None]
    assert outputs[3]["systemMessage"].splitlines()[0].endswith(RECEIPT_HEAD)


def test_a_broken_hook_input_still_lets_the_session_stop(codex_bin, model, proxy, home, tmp_path):
    proj = _project(tmp_path)
    _stdin_log, stdout_log = _spy(_gate_install(proj), tmp_path, before="head -c 17")
    codex_home = _codex_home(home, model, proj)
    model.extend(
        [
            call("exec_command", cmd="printf 'x = 1\\n' > calc.py"),
            say("Done: calc.py is written."),
        ]
    )
    run = run_codex(
        codex_bin, "write calc.py", cwd=proj, env=codex_env(home, codex_home, proxy.url)
    )
    assert run.returncode == 0, run.stderr
    assert model.played == 2
    assert model.overruns == 0, model.overrun_report()
    assert _messages(run) == ["Done: calc.py is written."]
    assert json.loads(stdout_log.read_text()) == {
        "systemMessage": "done gate: the Stop payload is not JSON; the stop was allowed"
    }


def test_an_ephemeral_session_sends_a_null_transcript_and_is_let_through(
    codex_bin, model, proxy, home, tmp_path
):
    """``codex exec --ephemeral`` writes no rollout; its Stop input carries
    ``transcript_path: null``. The gate cannot judge a session it cannot read and the index
    does not know: it says nothing (no ``systemMessage`` on every stop, issue 11) and the stop
    is allowed."""
    proj = _project(tmp_path)
    stdin_log, stdout_log = _spy(_gate_install(proj), tmp_path)
    codex_home = _codex_home(home, model, proj)
    model.extend(
        [
            call("exec_command", cmd="printf 'x = 1\\n' > calc.py"),
            say("Done: calc.py is written."),
        ]
    )
    run = run_codex(
        codex_bin,
        "write calc.py",
        cwd=proj,
        env=codex_env(home, codex_home, proxy.url),
        args=["--ephemeral"],
    )
    assert run.returncode == 0, run.stderr
    assert model.played == 2
    assert model.overruns == 0, model.overrun_report()
    [stop] = _inputs(stdin_log)
    assert stop["transcript_path"] is None
    assert stop["session_id"]
    assert stdout_log.read_text().strip() == ""


# -- task-stop --------------------------------------------------------------------------------


@pytest.fixture
def world(tmp_path: Path):
    w = World(tmp_path)
    yield w
    w.close()


def _agent_task(world: World, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **world.env()}
    return subprocess.run([str(AGENT_TASK), *args], env=env, capture_output=True, check=True)


def _install_stop(world: World, hooks: Path) -> None:
    _agent_task(
        world,
        "install-stop",
        "c1",
        "--harness",
        "codex",
        "--settings",
        str(hooks),
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
    codex_bin, model, proxy, home, world, tmp_path
):
    codex_home = _codex_home(home, model, world.repo)
    hooks = codex_home / "hooks.json"
    _install_stop(world, hooks)
    _stdin_log, stdout_log = _spy(hooks, tmp_path)
    _agent_task(world, "checkpoint", "c1", "--workspace", str(world.repo))
    model.extend(
        [
            say("Done: change c1 is finished."),
            # A login shell (``bash -lc`` resets PATH) and Codex's default environment policy
            # (it drops variables whose name holds TOKEN): the agent names both.
            call(
                "exec_command",
                cmd=f"AGENT_TASK_TOKEN_FILE={world.token_file} {AGENT_TASK} collect c1",
            ),
            say("Done: c1 is collected and qualified."),
        ]
    )
    env = codex_env(home, codex_home, proxy.url, world.env())
    run = run_codex(codex_bin, "finish change c1", cwd=world.repo, env=env)
    assert run.returncode == 0, run.stderr
    assert model.played == 3
    assert model.overruns == 0, model.overrun_report()
    held = [r.text() for r in model.loop_requests]
    assert "agent-task: this Change is not done yet." not in held[0]
    assert "agent-task: this Change is not done yet." in held[1]
    assert '"operation": "collector_claim"' in held[1]
    assert "receipt" in held[2]
    [block] = [json.loads(line) for line in stdout_log.read_text().splitlines()]
    assert block["decision"] == "block"
    assert block["reason"].startswith("agent-task: this Change is not done yet.")


def test_task_stop_lets_a_qualified_change_stop(codex_bin, model, proxy, home, world, tmp_path):
    codex_home = _codex_home(home, model, world.repo)
    hooks = codex_home / "hooks.json"
    _install_stop(world, hooks)
    stdin_log, stdout_log = _spy(hooks, tmp_path)
    _agent_task(world, "checkpoint", "c1", "--workspace", str(world.repo))
    _agent_task(world, "collect", "c1")
    model.extend([say("Done: change c1 is finished.")])
    env = codex_env(home, codex_home, proxy.url, world.env())
    run = run_codex(codex_bin, "finish change c1", cwd=world.repo, env=env)
    assert run.returncode == 0, run.stderr
    assert model.played == 1
    assert model.overruns == 0, model.overrun_report()
    assert len(_inputs(stdin_log)) == 1
    assert stdout_log.read_text() == ""
