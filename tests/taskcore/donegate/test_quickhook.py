"""The Stop hook's fast path answers exactly as the full hook, or leaves it to the full hook.

Two indexes over the same transcripts: one driven by the full hook alone, one by the fast
path (falling back to the full hook when it declines). After every stop both print the same
bytes and hold the same budget.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from taskcore.donegate import quickhook
from taskcore.donegate.config import GateConfig
from taskcore.donegate.hook import respond
from taskcore.donegate.index import GateIndex

from tests.taskcore.donegate.support import stop_payload

FIXTURES = Path(__file__).parent / "fixtures"


def _full(index: Path, harness: str, payload: bytes, *, subagent: bool = False) -> str:
    text = respond(harness, io.BytesIO(payload), index=index, subagent=subagent)
    return text + "\n" if text else ""


def _quick(
    index: Path, harness: str, payload: bytes, *, subagent: bool = False
) -> tuple[str, bool]:
    text = quickhook.answer(harness, payload, index_path=str(index), subagent=subagent)
    if text is None:
        return _full(index, harness, payload, subagent=subagent), False
    return (text + "\n" if text else ""), True


def _budget(index: Path) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(index))
    try:
        return conn.execute(
            "SELECT session_key, prompt_key, used, receipt_shown FROM gate_budget ORDER BY 1, 2"
        ).fetchall()
    finally:
        conn.close()


@pytest.fixture
def pair(roots: GateConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("AGENT_TASK_CLAUDE_PROJECTS_DIR", str(roots.claude_root))
    monkeypatch.setenv("AGENT_TASK_CODEX_SESSIONS_DIR", str(roots.codex_root))
    indexes = (tmp_path / "full" / "index.sqlite", tmp_path / "quick" / "index.sqlite")
    for index in indexes:
        scan = GateIndex(
            GateConfig(index_path=index, claude_root=roots.claude_root, codex_root=roots.codex_root)
        )
        scan.scan()
        scan.close()
    return roots, indexes


def _transcripts(roots: GateConfig) -> list[tuple[str, Path]]:
    claude = sorted(p for p in roots.claude_root.rglob("*.jsonl") if "subagents" not in p.parts)
    codex = sorted(roots.codex_root.rglob("*.jsonl"))
    return [("claude-code", p) for p in claude] + [("codex", p) for p in codex]


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"last_assistant_message": "I've added the timeout parameter."},
        {"last_assistant_message": "Which database should I use?"},
        {"last_assistant_message": "   "},
        {"stop_hook_active": True},
    ],
    ids=["no-message", "claim", "question", "blank", "hook-active"],
)
def test_every_transcript_gets_the_full_hooks_answer_stop_after_stop(pair, extra):
    roots, (full_index, quick_index) = pair
    answered = 0
    for harness, path in _transcripts(roots):
        payload = stop_payload(path, **extra)
        for _ in range(5):  # three re-entries, the receipt, then silence
            expected = _full(full_index, harness, payload)
            got, quick = _quick(quick_index, harness, payload)
            assert got == expected, (path.name, extra)
            answered += quick
    assert _budget(full_index) == _budget(quick_index)
    assert answered >= 5 * len(_transcripts(roots)) // 2  # the fast path did answer


@pytest.mark.parametrize("extra", [{}, {"stop_hook_active": True}], ids=["stop", "hook-active"])
def test_a_subagent_stop_gets_the_full_hooks_answer_on_the_subagents_own_transcript(pair, extra):
    """SubagentStop (--subagent) spends Stop's budget on the subagent's session, fast or full."""
    roots, (full_index, quick_index) = pair
    subagents = sorted(roots.claude_root.rglob("subagents/*.jsonl"))
    codex = sorted(roots.codex_root.rglob("*.jsonl"))[:3]
    assert subagents
    answered = 0
    for harness, path in [("claude-code", p) for p in subagents] + [("codex", p) for p in codex]:
        payload = stop_payload(
            path.parent,  # the main session's transcript_path is not what is judged
            hook_event_name="SubagentStop",
            agent_id="a1",
            agent_transcript_path=str(path),
            **extra,
        )
        for _ in range(5):
            expected = _full(full_index, harness, payload, subagent=True)
            got, quick = _quick(quick_index, harness, payload, subagent=True)
            assert got == expected, path.name
            answered += quick
    assert _budget(full_index) == _budget(quick_index)
    assert answered > 0


def test_a_transcript_that_grew_is_read_by_the_fast_path_itself(pair):
    roots, (full_index, quick_index) = pair
    path = next(p for h, p in _transcripts(roots) if p.name.startswith("2c3a5e93"))
    payload = stop_payload(path)
    assert _quick(quick_index, "claude-code", payload) == (
        _full(full_index, "claude-code", payload),
        True,
    )
    last = path.read_bytes().splitlines()[-1]
    with open(path, "ab") as f:
        f.write(last + b"\n")
    expected = _full(full_index, "claude-code", payload)
    assert _quick(quick_index, "claude-code", payload) == (expected, True)
    with open(path, "ab") as f:
        f.write(b'{"type": "user", "partial')  # a line still being written
    expected = _full(full_index, "claude-code", payload)
    assert _quick(quick_index, "claude-code", payload) == (expected, True)
    assert _budget(full_index) == _budget(quick_index)


def test_a_subagent_that_moved_on_is_read_with_its_main_session(pair):
    roots, (full_index, quick_index) = pair
    main = next(p for h, p in _transcripts(roots) if p.name.startswith("c38a5e93"))
    payload = stop_payload(main)
    assert _quick(quick_index, "claude-code", payload)[1]
    _full(full_index, "claude-code", payload)
    sub = sorted((main.parent / main.stem / "subagents").glob("*.jsonl"))[0]
    with open(sub, "ab") as f:
        f.write(sub.read_bytes().splitlines()[-1] + b"\n")
    expected = _full(full_index, "claude-code", payload)
    assert _quick(quick_index, "claude-code", payload) == (expected, True)
    assert _budget(full_index) == _budget(quick_index)


def test_what_the_fast_path_does_not_know_goes_to_the_full_hook(pair, tmp_path):
    roots, (_full_index, quick_index) = pair
    path = _transcripts(roots)[0][1]
    declined = [
        b"not json",
        b"[]",
        json.dumps({"hook_event_name": "Stop", "session_id": "s"}).encode(),
        stop_payload(path, hook_event_name="PreToolUse"),
        stop_payload(tmp_path / "missing.jsonl"),
    ]
    for raw in declined:
        assert quickhook.answer("claude-code", raw, index_path=str(quick_index)) is None
    assert (
        quickhook.answer("claude-code", stop_payload(path), index_path=str(tmp_path / "none"))
        is None
    )
    no_agent_transcript = stop_payload(path, hook_event_name="SubagentStop")
    assert (
        quickhook.answer(
            "claude-code", no_agent_transcript, subagent=True, index_path=str(quick_index)
        )
        is None
    )
    silent = stop_payload(path, hook_event_name="SubagentStop")
    assert quickhook.answer("claude-code", silent, index_path=str(quick_index)) == ""


def test_an_index_at_another_schema_version_is_left_to_the_full_hook(pair):
    roots, (_full_index, quick_index) = pair
    conn = apsw.Connection(str(quick_index))
    conn.execute("UPDATE schema_versions SET version = 1 WHERE component = 'gate_index'")
    conn.close()
    path = _transcripts(roots)[0][1]
    assert quickhook.answer("claude-code", stop_payload(path), index_path=str(quick_index)) is None


@pytest.mark.parametrize("grown", [False, True], ids=["indexed", "grown"])
def test_the_installed_hook_answers_without_attrs_or_the_index_code(pair, grown):
    import os
    import subprocess
    import sys

    roots, (_full_index, quick_index) = pair
    path = _transcripts(roots)[0][1]
    if grown:  # the fast path reads the new line itself, with the readers alone
        with open(path, "ab") as f:
            f.write(path.read_bytes().splitlines(keepends=True)[-1])
    probe = (
        "import sys; sys.argv = ['agent-task', 'gate-stop', '--harness', 'claude-code',"
        f" '--index', {str(quick_index)!r}]\n"
        "from taskcli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('attrs', 'cattrs', 'orjson', 'click', 'taskcore.codec', 'taskcore.donegate.index',"
        " 'taskcore.donegate.hook', 'typing', 'dataclasses', 'pathlib', 'datetime', 'hashlib',"
        " 'taskcore.store')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=stop_payload(path),
        capture_output=True,
        env=dict(os.environ),
        timeout=60,
        check=False,
    )
    assert done.stderr.decode().rsplit("LOADED ", 1)[-1].strip() == "[]"
    assert done.stdout == _full(_full_index, "claude-code", stop_payload(path)).encode()
