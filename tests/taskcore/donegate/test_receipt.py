"""The receipt: six lines at most, the allowed glyphs only, the repo line with n, an ask."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.donegate.evidence import Evidence
from taskcore.donegate.ladder import evaluate
from taskcore.donegate.receipt import RepoHistory, allowed_char, render, sanitize
from taskcore.limits import DONE_GATE_RECEIPT_MAX_LINES, GATE_RECEIPT_LINE_MAX_CHARS


def verdict_with(cmd: str, code: int) -> Evidence:
    ev = Evidence(harness="claude-code")
    ev.change(ev.next_pos(1), ["a.py"])
    ev.issue_shell("t", cmd, ev.next_pos(2))
    ev.resolve_shell("t", exit_code=code)
    return ev


@pytest.mark.parametrize(
    "history",
    [
        RepoHistory(n=0, reached=0),
        RepoHistory(n=7, reached=3),
        RepoHistory(n=102, reached=96),
        None,
    ],
)
def test_receipt_shape(history: RepoHistory | None) -> None:
    lines = render(evaluate([verdict_with("pytest -q", 1)]), history)
    assert len(lines) <= DONE_GATE_RECEIPT_MAX_LINES
    assert all(allowed_char(c) for line in lines for c in line)
    assert all(len(line) <= GATE_RECEIPT_LINE_MAX_CHARS for line in lines)
    assert lines[0].startswith("done gate  ○ this session is at rung 2 of 5 — artifact_changed")
    assert lines[-1].startswith("→ could you")
    assert lines[-1].endswith("?")
    repo = [line for line in lines if line.startswith("this repo")]
    assert len(repo) == 1
    if history is not None:
        assert f"(n={history.n}" in repo[0]


def test_small_groups_are_flagged_below_the_floor() -> None:
    lines = render(evaluate([verdict_with("pytest", 1)]), RepoHistory(n=7, reached=3))
    assert "3 of 7 past sessions here reached rung 3+   (n=7, below the n>=20 floor)" in lines[4]


def test_above_the_line_uses_the_filled_glyph() -> None:
    lines = render(evaluate([verdict_with("pytest", 0)]), RepoHistory(n=1, reached=1))
    assert lines[0].startswith("done gate  ● this session is at rung 3 of 5 — verified")


def test_commands_with_foreign_characters_are_sanitized() -> None:
    lines = render(evaluate([verdict_with("pytest -k 'café 😀'", 1)]), RepoHistory(n=0, reached=0))
    assert all(allowed_char(c) for line in lines for c in line)
    assert "caf?" in lines[3]


@given(st.text(max_size=300))
def test_sanitize_always_yields_allowed_glyphs(text: str) -> None:
    out = sanitize(text)
    assert all(allowed_char(c) for c in out)
    assert len(out) <= GATE_RECEIPT_LINE_MAX_CHARS
