"""One transcript read from an offset, without the index: names, keys, lazy readers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path, PurePosixPath

from hypothesis import given
from hypothesis import strategies as st
from taskcore.donegate.evidence import Evidence
from taskcore.donegate.transcript import feeder, fresh, read_transcript, session_key_for, stem

_NAME = st.text(alphabet="ab.-_x0", min_size=1, max_size=12).filter(lambda n: n not in (".", ".."))


@given(st.lists(_NAME, min_size=1, max_size=4))
def test_stem_is_pathlibs(parts):
    path = "/" + "/".join(parts)
    assert stem(path) == PurePosixPath(path).stem


def test_a_claude_subagent_file_knows_its_ids_and_its_parents_key(tmp_path: Path):
    path = tmp_path / "sess-1" / "subagents" / "agent-abc.jsonl"
    ev = fresh(path, "claude-code")
    assert (ev.subagent, ev.agent_id, ev.parent_session_id) == (True, "abc", "sess-1")
    assert session_key_for(ev, path) == ("claude-code:sess-1/abc", "claude-code:sess-1")
    dsh = Evidence(harness="dsh")
    assert session_key_for(dsh, tmp_path / "s-9" / "session.jsonl.zstd") == ("dsh:s-9", "")


def test_a_trailing_line_without_its_newline_is_returned_apart(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"type":"user","message":{"content":"hi"}}\n{"type":"us')
    ev, offset, tail = read_transcript(path, "claude-code", None, 0, path.stat().st_size)
    assert (ev.lines, ev.prompts, offset, tail) == (1, 1, 43, b'{"type":"us')


def test_a_harness_reader_is_loaded_only_when_asked_for():
    probe = (
        "import sys\n"
        "import taskcore.donegate.transcript as t\n"
        "before = {m for m in ('taskcore.donegate.claude', 'taskcore.donegate.codex',"
        " 'taskcore.donegate.dsh', 'taskcore.donegate.commands') if m in sys.modules}\n"
        "t.feeder('codex')\n"
        "print(sorted(before), 'taskcore.donegate.codex' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] True"
    assert feeder("claude-code").__module__ == "taskcore.donegate.claude"
