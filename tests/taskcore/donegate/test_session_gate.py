"""session_gate: the seed's object from a transcript, a session id or a directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from taskcore.codec import Codec
from taskcore.donegate.config import GateConfig
from taskcore.donegate.index import GateIndex
from taskcore.donegate.session_gate import SessionGateIn, SessionGateResult, session_gate
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import DONE_GATE_BUDGET

KEYS = [
    "rung",
    "rung_name",
    "below_line",
    "missing",
    "receipt_lines",
    "budget_left",
    "stale",
    "indexed",
]


def test_every_fixture_answers_as_expected_through_the_index(
    roots: GateConfig, tmp_path: Path, expected: dict[str, dict[str, Any]]
) -> None:
    for rel, exp in expected.items():
        ans = session_gate(SessionGateIn(transcript_path=str(tmp_path / rel)), config=roots)
        r = ans.result
        assert (r.rung, r.rung_name, r.below_line, r.missing, r.stale, r.indexed) == (
            exp["rung"],
            exp["rung_name"],
            exp["below_line"],
            exp["missing"],
            exp["stale"],
            True,
        ), rel
        assert r.budget_left == DONE_GATE_BUDGET


def test_the_result_is_exactly_the_seeds_object(roots: GateConfig, tmp_path: Path) -> None:
    path = next((tmp_path / "codex").rglob("*0002*.jsonl"))
    result = session_gate(SessionGateIn(transcript_path=str(path)), config=roots).result
    plain = Codec().unstructure(result)
    assert list(plain) == KEYS
    assert Codec().structure(plain, SessionGateResult) == result


def test_by_session_id_and_by_directory(roots: GateConfig) -> None:
    by_id = session_gate(
        SessionGateIn(session_id="019a1c2e-0007-7d3a-9b1e-4f2a6c8e0a07"), config=roots
    ).result
    assert (by_id.rung, by_id.indexed) == (2, True)
    index = GateIndex(roots)
    index.scan()
    latest = index.latest_for("/home/dev/src/acme-api")
    index.close()
    by_dir = session_gate(SessionGateIn(cwd="/home/dev/src/acme-api/src"), config=roots)
    assert latest is not None
    assert by_dir.session_key == latest.session_key


def test_unknown_session_and_directory_are_not_found(roots: GateConfig) -> None:
    for request in (SessionGateIn(session_id="nope"), SessionGateIn(cwd="/elsewhere")):
        with pytest.raises(TaskError) as err:
            session_gate(request, config=roots)
        assert err.value.code is ErrorCode.NOT_FOUND


def test_exactly_one_selector(roots: GateConfig) -> None:
    for request in (SessionGateIn(), SessionGateIn(session_id="a", cwd="/x")):
        with pytest.raises(TaskError) as err:
            session_gate(request, config=roots)
        assert err.value.code is ErrorCode.BAD_INPUT


@pytest.mark.parametrize(
    "make", ["outside", "symlink_out", "not_jsonl", "directory", "fifo", "missing", "dotdot"]
)
def test_remote_paths_outside_the_roots_are_refused(
    roots: GateConfig, tmp_path: Path, make: str
) -> None:
    inside = roots.claude_root / "-home-dev-src-acme-api"
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"type":"user","message":{"content":"x"}}\n')
    if make == "outside":
        target = secret
    elif make == "symlink_out":
        target = inside / "link.jsonl"
        target.symlink_to(secret)
    elif make == "not_jsonl":
        target = inside / "notes.txt"
        target.write_text("x")
    elif make == "directory":
        target = inside / "dir.jsonl"
        target.mkdir()
    elif make == "fifo":
        target = inside / "pipe.jsonl"
        os.mkfifo(target)
    elif make == "missing":
        target = inside / "absent.jsonl"
    else:
        target = inside / ".." / ".." / ".." / "secret.jsonl"
    with pytest.raises(TaskError) as err:
        session_gate(SessionGateIn(transcript_path=str(target)), config=roots, remote=True)
    assert err.value.code is ErrorCode.INVALID_PATH
    assert not roots.index_path.exists()


def test_remote_paths_inside_the_roots_and_symlinks_within_are_accepted(
    roots: GateConfig,
) -> None:
    inside = roots.codex_root / "2026" / "09" / "20"
    target = next(inside.glob("*0003*.jsonl"))
    link = roots.claude_root / "-home-dev-src-acme-api" / "alias.jsonl"
    link.symlink_to(target)
    for path in (target, link):
        r = session_gate(SessionGateIn(transcript_path=str(path)), config=roots, remote=True).result
        assert r.rung == 3


def test_remote_directory_is_matched_in_the_index_only(roots: GateConfig) -> None:
    ans = session_gate(
        SessionGateIn(cwd="/home/dev/src/acme-web/deep/er"), config=roots, remote=True
    )
    assert ans.session_key.startswith("codex:")


def test_without_a_usable_index_the_answer_is_direct_and_says_so(
    roots: GateConfig, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    cfg = GateConfig(
        index_path=blocker / "i.sqlite", claude_root=roots.claude_root, codex_root=roots.codex_root
    )
    path = next(roots.claude_root.rglob("2c3a5e93*.jsonl"))
    r = session_gate(SessionGateIn(transcript_path=str(path)), config=cfg).result
    assert (r.rung, r.indexed, r.budget_left) == (2, False, DONE_GATE_BUDGET)
    assert "could not be read" in r.receipt_lines[4]


def test_remote_subagent_files_must_stay_inside_the_roots(
    roots: GateConfig, tmp_path: Path
) -> None:
    main = roots.claude_root / "-home-dev-src-acme-api" / "2c3a5e93-3b66-4d20-9f90-4e7dab3a8c03"
    (main / "subagents").mkdir(parents=True)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text('{"type":"user","message":{"content":"x"}}\n')
    (main / "subagents" / "agent-x.jsonl").symlink_to(outside)
    ans = session_gate(
        SessionGateIn(transcript_path=str(main) + ".jsonl"), config=roots, remote=True
    )
    assert ans.result.rung == 2
    index = GateIndex(roots)
    with index.db.read() as store:
        assert store.get_file(str(outside)) is None
    index.close()
