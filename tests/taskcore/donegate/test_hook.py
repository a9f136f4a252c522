"""The Stop hook, run as the real ``agent-task gate-stop`` with a real stdin payload."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from taskcore.donegate.config import GateConfig
from taskcore.donegate.hook import respond

AGENT_TASK = str(Path(sys.executable).parent / "agent-task")
BELOW = "2c3a5e93-3b66-4d20-9f90-4e7dab3a8c03"  # artifact_changed
ABOVE = "3d4b6fa4-4c77-4e31-a0a1-5f8ebc4b9d04"  # verified


def env_for(roots: GateConfig, tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_TASK_", "CLAUDE_", "CODEX_"))
    }
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "AGENT_TASK_GATE_INDEX": str(roots.index_path),
            "AGENT_TASK_CLAUDE_PROJECTS_DIR": str(roots.claude_root),
            "AGENT_TASK_CODEX_SESSIONS_DIR": str(roots.codex_root),
        }
    )
    return env


def stop(
    roots: GateConfig, tmp_path: Path, payload: Any, *args: str, raw: bytes | None = None
) -> tuple[int, str, str]:
    data = raw if raw is not None else json.dumps(payload).encode()
    proc = subprocess.run(
        [AGENT_TASK, "gate-stop", *args],
        input=data,
        capture_output=True,
        env=env_for(roots, tmp_path),
        timeout=60,
        check=False,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def codex_payload(path: Path, n: str, last_message: str) -> dict[str, Any]:
    """A Codex Stop payload for the fixture rollout ``path`` (session ``019a1c2e-<n>-...``)."""
    return {
        "session_id": f"019a1c2e-{n}-7d3a-9b1e-4f2a6c8e0a{n[-2:]}",
        "turn_id": "turn-1",
        "transcript_path": str(path),
        "cwd": "/home/dev/src/acme-web",
        "hook_event_name": "Stop",
        "model": "gpt-5.1-codex",
        "permission_mode": "default",
        "stop_hook_active": False,
        "last_assistant_message": last_message,
    }


def claude_payload(roots: GateConfig, session: str, **extra: Any) -> dict[str, Any]:
    path = roots.claude_root / "-home-dev-src-acme-api" / f"{session}.jsonl"
    return {
        "session_id": session,
        "transcript_path": str(path),
        "cwd": "/home/dev/src/acme-api",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "I've added the timeout parameter.",
        "background_tasks": [],
        "session_crons": [],
        **extra,
    }


def test_claude_code_below_the_line_three_reentries_then_one_receipt(
    roots: GateConfig, tmp_path: Path
) -> None:
    outputs = [
        stop(roots, tmp_path, claude_payload(roots, BELOW), "--harness", "claude-code")
        for _ in range(6)
    ]
    assert all(code == 0 for code, _o, _e in outputs)
    blocks = [json.loads(o) for _c, o, _e in outputs[:3]]
    for b in blocks:
        ctx = b["hookSpecificOutput"]
        assert ctx["hookEventName"] == "Stop"
        lines = ctx["additionalContext"].split("\n")
        assert len(lines) <= 6
        assert lines[0].startswith("done gate  ○ this session is at rung 2")
        assert set(b) == {"hookSpecificOutput"}
    fourth = json.loads(outputs[3][1])
    assert set(fourth) == {"systemMessage"}
    assert fourth["systemMessage"].startswith("done gate  ○")
    assert outputs[4][1] == outputs[5][1] == ""


def test_codex_answers_with_decision_block_and_nothing_else(
    roots: GateConfig, tmp_path: Path
) -> None:
    path = next(roots.codex_root.rglob("*0002*.jsonl"))
    payload = codex_payload(path, "0002", "I've updated the retry constant to 2.")
    code, out, _err = stop(roots, tmp_path, payload, "--harness", "codex")
    body = json.loads(out)
    assert code == 0
    assert set(body) == {"decision", "reason"}
    assert body["decision"] == "block"
    assert body["reason"].strip()


def test_codex_without_a_transcript_path_finds_the_session_through_the_index(
    roots: GateConfig, tmp_path: Path
) -> None:
    payload = {
        "session_id": "019a1c2e-0007-7d3a-9b1e-4f2a6c8e0a07",
        "transcript_path": None,
        "cwd": "/home/dev/src/acme-web",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": None,
    }
    code, out, _err = stop(roots, tmp_path, payload, "--harness", "codex")
    assert code == 0
    assert json.loads(out)["decision"] == "block"


def test_above_the_line_is_silent(roots: GateConfig, tmp_path: Path) -> None:
    assert stop(roots, tmp_path, claude_payload(roots, ABOVE), "--harness", "claude-code")[:2] == (
        0,
        "",
    )


def test_stop_hook_active_allows_the_stop_and_spends_nothing(
    roots: GateConfig, tmp_path: Path
) -> None:
    payload = claude_payload(roots, BELOW, stop_hook_active=True)
    assert stop(roots, tmp_path, payload, "--harness", "claude-code")[:2] == (0, "")
    code, out, _ = stop(roots, tmp_path, claude_payload(roots, BELOW), "--harness", "claude-code")
    assert code == 0
    assert "hookSpecificOutput" in json.loads(out)


def test_subagent_stops_are_ignored_unless_asked_for(roots: GateConfig, tmp_path: Path) -> None:
    base = roots.claude_root / "-home-dev-src-acme-api"
    sub = (
        base / "c38a5e93-3b66-4c20-9f3d-e8d7ae4a829d" / "subagents" / "agent-b5e2d3f4a6c7b8d9.jsonl"
    )
    payload = {
        "session_id": "c38a5e93-3b66-4c20-9f3d-e8d7ae4a829d",
        "transcript_path": str(base / "c38a5e93-3b66-4c20-9f3d-e8d7ae4a829d.jsonl"),
        "cwd": "/home/dev/src/acme-api",
        "hook_event_name": "SubagentStop",
        "stop_hook_active": False,
        "agent_id": "b5e2d3f4a6c7b8d9",
        "agent_type": "general-purpose",
        "agent_transcript_path": str(sub),
        "last_assistant_message": "Updated the docs.",
    }
    assert stop(roots, tmp_path, payload, "--harness", "claude-code")[:2] == (0, "")
    code, out, _ = stop(roots, tmp_path, payload, "--harness", "claude-code", "--subagent")
    body = json.loads(out)
    assert code == 0
    assert body["hookSpecificOutput"]["hookEventName"] == "SubagentStop"


def test_a_subagent_stop_is_judged_on_the_subagent_never_on_the_main_session(
    roots: GateConfig, tmp_path: Path
) -> None:
    """A SubagentStop without an agent transcript does not fall back to the main session's."""
    base = roots.claude_root / "-home-dev-src-acme-api"
    main = claude_payload(roots, BELOW)  # the main session is below the line
    payload = {**main, "hook_event_name": "SubagentStop", "agent_id": "nobody-knows"}
    code, out, _ = stop(roots, tmp_path, payload, "--harness", "claude-code", "--subagent")
    assert code == 0
    assert json.loads(out) == {
        "systemMessage": "done gate: the session could not be read (NOT_FOUND); "
        "the stop was allowed"
    }
    # Codex sends agent_transcript_path null for a subagent it keeps no rollout of: silence.
    codex = {**payload, "agent_transcript_path": None}
    assert stop(roots, tmp_path, codex, "--harness", "codex", "--subagent")[:2] == (0, "")
    del codex["agent_id"]
    assert stop(roots, tmp_path, codex, "--harness", "codex", "--subagent")[:2] == (0, "")
    # With the subagent's own transcript it is judged, and spends the subagent's budget.
    sub = (
        base / "c38a5e93-3b66-4c20-9f3d-e8d7ae4a829d" / "subagents" / "agent-b5e2d3f4a6c7b8d9.jsonl"
    )
    judged = {**payload, "agent_transcript_path": str(sub)}
    code, out, _ = stop(roots, tmp_path, judged, "--harness", "claude-code", "--subagent")
    assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SubagentStop"


def test_last_assistant_message_is_used_when_the_transcript_lags(
    roots: GateConfig, tmp_path: Path
) -> None:
    question = "0a9e3c71-1f44-4b0e-9d7e-2c5b8f1e6a01"  # rung 0 from its transcript alone
    payload = claude_payload(roots, question, last_assistant_message="Done, it is fixed.")
    code, out, _ = stop(roots, tmp_path, payload, "--harness", "claude-code")
    assert code == 0
    assert "rung 1 of 5" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "not JSON"),
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"hook_event_name": "Stop"}', "names no transcript"),
        (
            b'{"hook_event_name": "Stop", "transcript_path": "/nonexistent/x.jsonl"}',
            "does not exist",
        ),
        (b'{"hook_event_name": "PreToolUse", "transcript_path": "/x"}', "not Stop"),
    ],
)
def test_trouble_gives_one_line_and_allows_the_stop(
    roots: GateConfig, tmp_path: Path, raw: bytes, reason: str
) -> None:
    code, out, _err = stop(roots, tmp_path, None, "--harness", "claude-code", raw=raw)
    assert code == 0
    assert out.count("\n") == 1
    msg = json.loads(out)["systemMessage"]
    assert reason in msg
    assert msg.endswith("the stop was allowed")


def test_a_locked_index_fails_open(roots: GateConfig, tmp_path: Path) -> None:
    import apsw

    # A first run creates the index; then another process holds its write lock.
    stop(roots, tmp_path, claude_payload(roots, ABOVE), "--harness", "claude-code")
    holder = apsw.Connection(str(roots.index_path))
    holder.execute("BEGIN EXCLUSIVE")
    try:
        code, out, _ = stop(
            roots, tmp_path, claude_payload(roots, BELOW), "--harness", "claude-code"
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 0
    assert "the stop was allowed" in json.loads(out)["systemMessage"]


def test_its_own_deadline_allows_the_stop(roots: GateConfig, tmp_path: Path) -> None:
    # A writer that never closes stdin: the hook must answer anyway.
    proc = subprocess.Popen(
        [AGENT_TASK, "gate-stop", "--harness", "codex", "--deadline-ms", "300"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env_for(roots, tmp_path),
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b'{"hook_event_name": ')
    proc.stdin.flush()
    out = proc.stdout.read()
    code = proc.wait(timeout=60)
    proc.stdin.close()
    assert code == 0
    assert "no answer within 300 ms" in json.loads(out)["systemMessage"]


def test_a_wrong_command_line_still_allows_the_stop(roots: GateConfig, tmp_path: Path) -> None:
    code, out, _ = stop(roots, tmp_path, {}, "--harness", "cursor")
    assert code == 0
    assert "reinstall" in json.loads(out)["systemMessage"]


def test_the_hook_path_loads_no_http_or_mcp_stack(roots: GateConfig, tmp_path: Path) -> None:
    probe = (
        "import sys, runpy; sys.argv = ['agent-task', 'gate-stop', '--harness', 'codex'];"
        "from taskcli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('starlette', 'uvicorn', 'mcp', 'taskhttp', 'taskmcp', "
        "'backports.zstd', 'compression.zstd') "
        "if m in sys.modules]\nprint('LOADED', bad, file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        input=b"{}",
        capture_output=True,
        env=env_for(roots, tmp_path),
        timeout=60,
        check=False,
    )
    assert "LOADED []" in proc.stderr.decode()


def test_in_process_respond_reports_the_same_shapes(
    roots: GateConfig, monkeypatch: Any, tmp_path: Path
) -> None:
    for key, value in env_for(roots, tmp_path).items():
        monkeypatch.setenv(key, value)
    payload = json.dumps(claude_payload(roots, BELOW)).encode()
    out = respond("claude-code", io.BytesIO(payload))
    assert "additionalContext" in json.loads(out)["hookSpecificOutput"]
    assert (
        "the Stop payload is not JSON"
        in json.loads(respond("codex", io.BytesIO(b"{")))["systemMessage"]
    )


def test_codex_with_a_null_transcript_path_and_no_known_session_stays_silent(
    roots: GateConfig, tmp_path: Path
) -> None:
    payload = {
        "session_id": "019a1c2e-ffff-7d3a-9b1e-4f2a6c8e0aff",
        "transcript_path": None,
        "cwd": "/home/dev/src/nowhere",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": None,
    }
    for _ in range(3):
        code, out, _err = stop(roots, tmp_path, payload, "--harness", "codex")
        assert (code, out) == (0, "")


def test_claude_code_naming_no_known_session_still_says_why(
    roots: GateConfig, tmp_path: Path
) -> None:
    payload = {"session_id": "019a1c2e-ffff-7d3a-9b1e-4f2a6c8e0aff", "hook_event_name": "Stop"}
    code, out, _err = stop(roots, tmp_path, payload, "--harness", "claude-code")
    assert code == 0
    assert "the stop was allowed" in json.loads(out)["systemMessage"]


def test_a_codex_rollout_written_behind_the_turn_is_waited_for(roots, tmp_path):
    """Codex writes its rollout on a background task: at Stop, the command's output and the
    turn's end may not be in the file yet. The hook waits (bounded) for the payload's last
    message to appear, then judges the whole turn: a passing test run, not a running one."""
    path = next(roots.codex_root.rglob("*0003*.jsonl"))
    lines = path.read_bytes().splitlines(keepends=True)
    assert b"function_call_output" in lines[-2]
    path.write_bytes(b"".join(lines[:-2]))  # the output and task_complete: still unwritten
    payload = codex_payload(path, "0003", "Updated; all 42 tests pass.")

    def written_late() -> None:
        time.sleep(0.5)
        with open(path, "ab") as f:
            f.write(b"".join(lines[-2:]))

    late = threading.Thread(target=written_late)
    late.start()
    code, out, _err = stop(roots, tmp_path, payload, "--harness", "codex")
    late.join()
    assert code == 0
    assert "has not reported an exit code" not in out
    assert out == ""  # a verified change, committed or not, of a session that passed its tests
