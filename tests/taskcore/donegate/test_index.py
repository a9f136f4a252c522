"""The local index: incremental reads, partial lines, replaced files, scans, subagents."""

from __future__ import annotations

import json
import os
from pathlib import Path

from taskcore.donegate.config import GateConfig
from taskcore.donegate.index import GateIndex, read_transcript
from taskcore.limits import GATE_LINE_MAX_BYTES

BASH = {
    "type": "assistant",
    "message": {
        "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}
        ]
    },
}
OK = {
    "type": "user",
    "message": {
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "1 passed", "is_error": False}
        ]
    },
}
EDIT = {
    "type": "assistant",
    "message": {
        "content": [
            {"type": "tool_use", "id": "e1", "name": "Edit", "input": {"file_path": "a.py"}}
        ]
    },
}
EDIT_OK = {
    "type": "user",
    "message": {"content": [{"type": "tool_result", "tool_use_id": "e1", "content": "updated"}]},
}


def jl(*recs: dict[str, object]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in recs)


def session_file(roots: GateConfig, name: str = "s1") -> Path:
    path = roots.claude_root / "-w-repo" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_second_read_reads_only_the_new_bytes(roots: GateConfig) -> None:
    path = session_file(roots)
    path.write_bytes(
        jl(
            {"type": "user", "sessionId": "s1", "cwd": "/w/repo", "message": {"content": "go"}},
            EDIT,
            EDIT_OK,
        )
    )
    index = GateIndex(roots)
    first = index.refresh(path)
    assert first.bytes_read == path.stat().st_size
    again = index.refresh(path)
    assert again.bytes_read == 0
    added = jl(BASH, OK)
    with open(path, "ab") as f:
        f.write(added)
    third = index.refresh(path)
    assert third.bytes_read == len(added)
    assert [c.status for c in third.evidence.checks] == ["passed"]
    assert third.evidence.prompts == 1
    index.close()


def test_a_partial_last_line_is_read_for_the_answer_but_not_stored(roots: GateConfig) -> None:
    path = session_file(roots)
    full = jl(EDIT, EDIT_OK, BASH)
    ok = json.dumps(OK).encode()
    path.write_bytes(full + ok[:20])
    index = GateIndex(roots)
    r1 = index.refresh(path)
    assert r1.evidence.checks == []  # truncated, unparseable: not counted, not an error
    with open(path, "ab") as f:
        f.write(ok[20:])  # the writer finishes the line but not yet its newline
    r2 = index.refresh(path)
    assert [c.status for c in r2.evidence.checks] == ["passed"]
    with index.db.read() as store:
        rec = store.get_file(str(path.resolve()))
    assert rec is not None
    assert rec.offset == len(full)
    with open(path, "ab") as f:
        f.write(b"\n")
    r3 = index.refresh(path)
    assert [c.status for c in r3.evidence.checks] == ["passed"]
    assert r3.bytes_read == len(ok) + 1
    index.close()


def test_a_replaced_or_shrunk_file_is_read_again_from_the_start(roots: GateConfig) -> None:
    path = session_file(roots)
    path.write_bytes(jl({"type": "user", "message": {"content": "one"}}, EDIT, EDIT_OK))
    index = GateIndex(roots)
    index.refresh(path)
    path.write_bytes(jl({"type": "user", "message": {"content": "two"}}))
    r = index.refresh(path)
    assert (r.evidence.prompts, r.evidence.files_written()) == (1, 0)
    assert r.bytes_read == path.stat().st_size
    index.close()


def test_overlong_lines_are_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as f:
        f.write(jl(EDIT, EDIT_OK))
        f.write(b'{"type":"user","message":{"content":"' + b"x" * (GATE_LINE_MAX_BYTES + 10))
        f.write(b'"}}\n')
        f.write(jl(BASH, OK))
    ev, offset, tail = read_transcript(path, "claude-code", None, 0, path.stat().st_size)
    assert (offset, tail) == (path.stat().st_size, b"")
    assert ev.skipped_lines == 1
    assert [c.status for c in ev.checks] == ["passed"]


def test_scan_indexes_both_roots_and_a_rescan_reads_nothing(roots: GateConfig) -> None:
    index = GateIndex(roots)
    first = index.scan()
    files, sessions = index.counts()
    assert first.files_read == first.files_seen == files == sessions == 31
    assert first.bytes_read > 0
    second = index.scan()
    assert (second.files_read, second.bytes_read) == (0, 0)
    index.close()


def test_scan_records_rungs_repositories_and_subagent_parents(roots: GateConfig) -> None:
    index = GateIndex(roots)
    index.scan()
    main = index.find_session("c38a5e93-3b66-4c20-9f3d-e8d7ae4a829d")
    assert main is not None
    assert (main.subagent, main.rung) == (False, 3)
    with index.db.read() as store:
        kids = store.children(main.session_key)
    assert {k.rung for k in kids} == {2, 3}
    latest = index.latest_for("/home/dev/src/acme-web/src")
    assert latest is not None
    assert latest.harness == "codex"
    n, reached = index.repository_history("/home/dev/src/acme-api", "none")
    assert n == 20
    assert 0 < reached < n
    index.close()


def test_only_the_index_is_written(roots: GateConfig, tmp_path: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "claude").rglob("*")}
    index = GateIndex(roots)
    index.scan()
    index.close()
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "claude").rglob("*")}
    assert before == after
    assert oct(os.stat(roots.index_path).st_mode & 0o777) == "0o600"


def test_scan_leaves_out_symlinks_that_point_outside_the_roots(
    roots: GateConfig, tmp_path: Path
) -> None:
    outside = tmp_path / "private.jsonl"
    outside.write_bytes(jl(EDIT, EDIT_OK))
    (roots.claude_root / "-home-dev-src-acme-api" / "sneaky.jsonl").symlink_to(outside)
    index = GateIndex(roots)
    report = index.scan()
    index.close()
    assert report.files_seen == 31
