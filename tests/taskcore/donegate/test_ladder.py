"""The ladder: every rung and edge case of the checked-in fixtures, and merges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from taskcore.donegate.config import harness_of
from taskcore.donegate.evidence import Evidence
from taskcore.donegate.index import feeder
from taskcore.donegate.ladder import RUNG_NAMES, claims_done, evaluate

from tests.taskcore.donegate.conftest import FIXTURES


def read_all(path: Path) -> Evidence:
    from taskcore.donegate.config import GateConfig

    cfg = GateConfig(
        index_path=Path("/nonexistent"),
        claude_root=FIXTURES / "claude/projects",
        codex_root=FIXTURES / "codex/sessions",
    )
    harness = harness_of(path, cfg)
    ev = Evidence(harness=harness)
    if path.parent.name == "subagents":
        ev.subagent = True
    for raw in path.read_bytes().split(b"\n"):
        if raw.strip():
            feeder(harness)(ev, raw)
    return ev


def own_fixtures(expected: dict[str, dict[str, Any]]) -> list[str]:
    # Sessions whose answer does not depend on their subagents' files.
    return [k for k in expected if "c38a5e93" not in k or "subagents" in k]


def test_every_fixture_without_subagents_gets_its_expected_rung(
    expected: dict[str, dict[str, Any]],
) -> None:
    for rel in own_fixtures(expected):
        exp = expected[rel]
        ev = read_all(FIXTURES / rel)
        v = evaluate([ev])
        assert (v.rung, v.rung_name, v.below_line, v.missing, v.stale) == (
            exp["rung"],
            exp["rung_name"],
            exp["below_line"],
            exp["missing"],
            exp["stale"],
        ), rel
        if "files_written" in exp:
            assert v.files_written == exp["files_written"], rel


def test_fixtures_cover_every_rung(expected: dict[str, dict[str, Any]]) -> None:
    assert {e["rung"] for e in expected.values()} == set(range(len(RUNG_NAMES)))


def test_main_session_merges_its_subagents_evidence() -> None:
    base = FIXTURES / "claude/projects/-home-dev-src-acme-api"
    main = read_all(base / "c38a5e93-3b66-4c20-9f3d-e8d7ae4a829d.jsonl")
    subs = [read_all(p) for p in sorted((base / main.session_id / "subagents").iterdir())]
    assert evaluate([main]).rung == 1
    merged = evaluate([main, *subs])
    assert (merged.rung, merged.files_written) == (3, 3)


def test_inline_sidechain_work_does_not_count_for_the_main_session() -> None:
    ev = read_all(
        FIXTURES / "claude/projects/-home-dev-src-acme-api/"
        "d49b6fa4-4c77-4d31-a04e-f9e8bf5b93ae.jsonl"
    )
    assert (ev.files_written(), evaluate([ev]).rung) == (0, 0)


def test_last_assistant_message_stands_in_when_the_transcript_lags() -> None:
    ev = read_all(
        FIXTURES / "claude/projects/-home-dev-src-acme-api/"
        "0a9e3c71-1f44-4b0e-9d7e-2c5b8f1e6a01.jsonl"
    )
    assert evaluate([ev]).rung == 0
    assert evaluate([ev], last_message="Done, the retry decorator is fixed.").rung == 1


def test_a_commit_of_unchecked_work_stays_below_the_line() -> None:
    ev = Evidence(harness="claude-code")
    ev.issue_shell("w", "echo x > a.py && git commit -am x && git push", ev.next_pos(1))
    ev.resolve_shell("w", exit_code=0)
    v = evaluate([ev])
    assert (v.rung, v.commits) == (2, 1)


def test_a_later_failed_check_undoes_verified() -> None:
    ev = Evidence(harness="claude-code")
    ev.change(ev.next_pos(1), ["a.py"])
    for ref, line, code in (("1", "pytest", 0), ("2", "ruff check .", 1)):
        ev.issue_shell(ref, line, ev.next_pos(2))
        ev.resolve_shell(ref, exit_code=code)
    v = evaluate([ev])
    assert (v.rung, v.missing) == (2, "`ruff check .` exited 1 after the last change")


def test_failed_then_fixed_check_of_the_same_kind_is_verified() -> None:
    ev = Evidence(harness="claude-code")
    ev.change(ev.next_pos(1), ["a.py"])
    for ref, code in (("1", 1), ("2", 0)):
        ev.issue_shell(ref, "pytest", ev.next_pos(2))
        ev.resolve_shell(ref, exit_code=code)
    assert evaluate([ev]).rung == 3


@pytest.mark.parametrize(
    ("text", "claimed"),
    [
        ("All set - the endpoint is fixed.", True),
        ("I have implemented the parser.", True),
        ("Here is how the cache works: it stores entries by key.", False),
        ("Should I also update the docs?", False),
        ("", False),
    ],
)
def test_done_claims_are_read_from_a_fixed_word_list(text: str, claimed: bool) -> None:
    assert claims_done(text) is claimed
