"""The fast path's own index step writes what the full indexer writes and answers as it does.

Two indexes over the same transcript roots (Claude Code, Codex and dsh): one kept by the full
hook alone (:func:`taskcore.donegate.hook.respond`, i.e. ``GateIndex.refresh`` and
``session_gate.answer``), one by the fast path (:func:`taskcore.donegate.quickhook.answer`,
which reads a grown transcript through :mod:`taskcore.donegate.quickindex`). Each case changes
the files, then both hooks answer the same stops: the output bytes, and every row of
``gate_file``, ``gate_session``, ``gate_verdict`` and ``gate_budget`` (all but the write
times), must be equal after every stop.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from taskcore.donegate import quickhook, quickindex
from taskcore.donegate.config import GateConfig
from taskcore.donegate.hook import respond
from taskcore.donegate.index import GateIndex

from tests.taskcore.donegate.support import stop_payload

FIXTURES = Path(__file__).parent / "fixtures"
_CLAUDE_MAIN = "2c3a5e93-3b66-4d20-9f90-4e7dab3a8c03.jsonl"  # rung 2, edits and no check
_CLAUDE_PARENT = "c38a5e93-3b66-4c20-9f3d-e8d7ae4a829d.jsonl"  # two subagent files
_CODEX = "rollout-2026-09-20T10-00-00-019a1c2e-0001-7d3a-9b1e-4f2a6c8e0a01.jsonl"

_TABLES = {
    "gate_file": "path, harness, session_key, byte_offset, size, mtime_ns, head, state",
    "gate_session": "session_key, harness, session_id, parent_key, subagent, path, cwd, "
    "repository, first_ms, last_ms, rung, rung_name, prompts",
    "gate_verdict": "session_key, verdict",
    "gate_budget": "session_key, prompt_key, used, receipt_shown",
}


def _rows(index: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = apsw.Connection(str(index))
    try:
        return {
            table: conn.execute(f"SELECT {cols} FROM {table} ORDER BY 1, 2").fetchall()
            for table, cols in _TABLES.items()
        }
    finally:
        conn.close()


class Roots:
    """Private copies of the fixture roots, and the two indexes over them."""

    def __init__(self, tmp: Path) -> None:
        shutil.copytree(FIXTURES / "claude", tmp / "claude")
        shutil.copytree(FIXTURES / "codex", tmp / "codex")
        (tmp / "dsh").mkdir()
        for kind in ("raw", "zstd"):
            for session in (FIXTURES / "dsh" / kind).glob("*/*"):
                shutil.copytree(
                    session, tmp / "dsh" / session.parent.name / f"{kind}-{session.name}"
                )
        self.claude = tmp / "claude" / "projects"
        self.project = self.claude / "-home-dev-src-acme-api"
        self.codex = tmp / "codex" / "sessions"
        self.dsh = tmp / "dsh"
        self.full = tmp / "full" / "index.sqlite"
        self.quick = tmp / "quick" / "index.sqlite"
        for index in (self.full, self.quick):
            gate = GateIndex(
                GateConfig(
                    index_path=index,
                    claude_root=self.claude,
                    codex_root=self.codex,
                    dsh_root=self.dsh,
                )
            )
            gate.scan()
            gate.close()

    def codex_rollout(self) -> Path:
        return next(self.codex.rglob(_CODEX))

    def dsh_session(self, name: str) -> Path:
        return next(p for p in self.dsh.rglob("session.jsonl*") if p.parent.name == name)


@pytest.fixture
def roots(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Roots:
    r = Roots(tmp_path)
    monkeypatch.setenv("AGENT_TASK_CLAUDE_PROJECTS_DIR", str(r.claude))
    monkeypatch.setenv("AGENT_TASK_CODEX_SESSIONS_DIR", str(r.codex))
    monkeypatch.setenv("AGENT_TASK_DSH_SESSIONS_DIR", str(r.dsh))
    return r


def _append(path: Path, *lines: bytes | str) -> None:
    with open(path, "ab") as f:
        for line in lines:
            f.write(line.encode() if isinstance(line, str) else line)


def _claude(kind: str, session: str, ts: str, content: Any, **extra: Any) -> str:
    record = {
        "type": kind,
        "timestamp": f"2026-09-20T11:{ts}.000Z",
        "cwd": "/home/dev/src/acme-api",
        "sessionId": session,
        "isSidechain": False,
        "message": {"role": kind, "content": content},
        **extra,
    }
    return json.dumps(record) + "\n"


def _bash_turn(session: str, ref: str, command: str, *, error: bool = False) -> list[str]:
    use = [{"type": "tool_use", "id": ref, "name": "Bash", "input": {"command": command}}]
    result = [
        {
            "type": "tool_result",
            "tool_use_id": ref,
            "is_error": error,
            "content": "Exit code 1\n1 failed" if error else "3 passed",
        }
    ]
    return [
        _claude("assistant", session, "00:01", use),
        _claude("user", session, "00:02", result),
        _claude("assistant", session, "00:03", [{"type": "text", "text": "Done: tests pass."}]),
    ]


def _codex_turn(ref: str, command: str, code: int) -> list[str]:
    call = {
        "timestamp": "2026-09-20T11:00:01.000Z",
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": command}),
            "call_id": ref,
        },
    }
    out = {
        "timestamp": "2026-09-20T11:00:02.000Z",
        "type": "response_item",
        "payload": {
            "type": "function_call_output",
            "call_id": ref,
            "output": f"Process exited with code {code}\nOutput:\nok",
        },
    }
    return [json.dumps(call) + "\n", json.dumps(out) + "\n"]


# -- the cases: (what changes, which transcript stops, whether the fast path reads it) ------


def _grew_one_line(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    _append(path, path.read_bytes().splitlines()[-1] + b"\n")
    return path


def _grew_a_passing_check(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    _append(path, *_bash_turn(_CLAUDE_MAIN[:-6], "toolu_new_1", "uv run pytest -q"))
    return path


def _grew_a_failing_check(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    _append(path, *_bash_turn(_CLAUDE_MAIN[:-6], "toolu_new_2", "pytest", error=True))
    return path


def _grew_a_new_prompt(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    _append(path, _claude("user", _CLAUDE_MAIN[:-6], "00:00", "now add a retry"))
    return path


def _truncated_last_line(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    turn = _bash_turn(_CLAUDE_MAIN[:-6], "toolu_new_3", "make test")
    _append(path, turn[0], turn[1][:40])  # the result is still being written
    return path


def _last_line_without_newline(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    turn = _bash_turn(_CLAUDE_MAIN[:-6], "toolu_new_5", "make test")
    _append(path, turn[0], turn[1].rstrip("\n"))  # read for the answer, not stored as read
    return path


def _truncated_then_completed(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    turn = _bash_turn(_CLAUDE_MAIN[:-6], "toolu_new_4", "make test")
    _append(path, turn[0], turn[1][:40])
    _stop_both(r, path)
    _append(path, turn[1][40:], turn[2])
    return path


def _subagent_grew(r: Roots) -> Path:
    main = r.project / _CLAUDE_PARENT
    sub = sorted((main.parent / main.stem / "subagents").glob("*.jsonl"))[0]
    session = _CLAUDE_PARENT[:-6]
    _append(sub, *_bash_turn(session, "toolu_sub_1", "cargo test"))
    return main


def _new_subagent(r: Roots) -> Path:
    main = r.project / _CLAUDE_PARENT
    sub = main.parent / main.stem / "subagents" / "agent-c0ffee00c0ffee00.jsonl"
    session = _CLAUDE_PARENT[:-6]
    _append(sub, *_bash_turn(session, "toolu_sub_2", "npm test", error=True))
    return main


def _new_session(r: Roots) -> Path:
    path = r.project / "9e9e9e9e-0000-4000-8000-000000000001.jsonl"
    sid = path.stem
    _append(
        path,
        _claude("user", sid, "00:00", "fix the parser"),
        _claude(
            "assistant",
            sid,
            "00:01",
            [{"type": "tool_use", "id": "e1", "name": "Edit", "input": {"file_path": "src/p.py"}}],
        ),
        _claude("user", sid, "00:02", [{"type": "tool_result", "tool_use_id": "e1"}]),
    )
    return path


def _rotated(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    sid = _CLAUDE_MAIN[:-6]
    path.write_text(
        _claude("user", sid, "00:00", "a new start") + "".join(_bash_turn(sid, "r1", "pytest"))
    )
    return path


def _shrunk(r: Roots) -> Path:
    path = r.project / _CLAUDE_MAIN
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))
    return path


def _codex_grew(r: Roots) -> Path:
    path = r.codex_rollout()
    _append(path, *_codex_turn("call_new_1", "cargo test", 0))
    return path


def _codex_grew_failing(r: Roots) -> Path:
    path = r.codex_rollout()
    _append(path, *_codex_turn("call_new_2", "go test ./...", 2))
    return path


def _dsh_raw_grew(r: Roots) -> Path:
    path = r.dsh_session("raw-s-verified")
    _append(path, path.read_bytes().splitlines()[-1] + b"\n")
    return path


def _dsh_zstd_grew(r: Roots) -> Path:
    path = r.dsh_session("zstd-s-edit_only")
    data = path.read_bytes()
    _append(path, data[-64:])  # not a frame: the full hook reads .zstd files
    return path


def _unchanged(r: Roots) -> Path:
    return r.project / _CLAUDE_MAIN


CASES: dict[str, tuple[Callable[[Roots], Path], bool]] = {
    "unchanged": (_unchanged, True),
    "grew-one-line": (_grew_one_line, True),
    "grew-a-passing-check": (_grew_a_passing_check, True),
    "grew-a-failing-check": (_grew_a_failing_check, True),
    "grew-a-new-prompt": (_grew_a_new_prompt, True),
    "truncated-last-line": (_truncated_last_line, True),
    "last-line-without-newline": (_last_line_without_newline, True),
    "truncated-then-completed": (_truncated_then_completed, True),
    "subagent-grew": (_subagent_grew, True),
    "new-subagent": (_new_subagent, True),
    "new-session": (_new_session, True),
    "rotated": (_rotated, True),
    "shrunk": (_shrunk, True),
    "codex-grew": (_codex_grew, True),
    "codex-grew-failing": (_codex_grew_failing, True),
    "dsh-raw-grew": (_dsh_raw_grew, True),
    "dsh-zstd-grew": (_dsh_zstd_grew, False),
}


def _full(r: Roots, harness: str, payload: bytes) -> str:
    return respond(harness, io.BytesIO(payload), index=r.full)


def _stop_both(r: Roots, path: Path, harness: str = "claude-code", **extra: Any) -> str | None:
    """One stop on both indexes; the quick one's answer (``None``: the fast path declined)."""
    payload = stop_payload(path, **extra)
    expected = _full(r, harness, payload)
    got = quickhook.answer(harness, payload, index_path=str(r.quick))
    fallback = got if got is not None else respond(harness, io.BytesIO(payload), index=r.quick)
    assert fallback == expected
    assert _rows(r.quick) == _rows(r.full)
    return got


@pytest.mark.parametrize(
    "extra",
    [{}, {"last_assistant_message": "I've added the retry."}, {"stop_hook_active": True}],
    ids=["no-message", "claim", "hook-active"],
)
@pytest.mark.parametrize("case", list(CASES))
def test_a_changed_transcript_is_indexed_and_answered_as_the_full_hook_does(roots, case, extra):
    change, fast = CASES[case]
    path = change(roots)
    harness = "codex" if case.startswith(("codex", "dsh")) else "claude-code"
    for stop in range(5):  # three re-entries, the receipt, then silence
        got = _stop_both(roots, path, harness, **extra)
        if stop == 0:
            assert (got is not None) == fast, case
        if stop == 2:  # and the agent's next turn, read by the fast path in turn
            _append(path, path.read_bytes().splitlines(keepends=True)[-1])


def test_every_fixture_transcript_grown_by_a_line_is_answered_alike(roots):
    transcripts = [("claude-code", p) for p in roots.project.glob("*.jsonl")]
    transcripts += [("codex", p) for p in roots.codex.rglob("*.jsonl")]
    transcripts += [("codex", roots.dsh_session("raw-s-verified"))]
    answered = 0
    for harness, path in sorted(transcripts):
        _append(path, path.read_bytes().splitlines(keepends=True)[-1])
        answered += _stop_both(roots, path, harness) is not None
    assert answered == len(transcripts)


def test_more_unread_bytes_than_the_fast_path_reads_go_to_the_full_hook(
    roots, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(quickindex, "READ_MAX_BYTES", 100)
    path = _grew_a_passing_check(roots)
    assert _stop_both(roots, path) is None
    _append(path, b"\n")  # one byte more: now within the allowance
    assert _stop_both(roots, path) is not None


def test_a_declined_read_leaves_nothing_written(roots, monkeypatch: pytest.MonkeyPatch):
    main = _subagent_grew(roots)
    _append(main, *_bash_turn(_CLAUDE_PARENT[:-6], "toolu_main_1", "pytest"))
    before = _rows(roots.quick)
    # The main file is read and its rows written; then a subagent file cannot be read.
    monkeypatch.setattr(
        quickindex, "_subagent_files", lambda _path: [str(roots.project / "missing.jsonl")]
    )
    assert quickhook.answer("claude-code", stop_payload(main), index_path=str(roots.quick)) is None
    assert _rows(roots.quick) == before
