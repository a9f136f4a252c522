"""The resumable evidence state: positions, caps, serialization."""

from __future__ import annotations

from taskcore.donegate.evidence import Evidence, is_artifact_path
from taskcore.limits import GATE_CHECKS_KEPT, GATE_FILES_KEPT, GATE_PENDING_MAX


def test_round_trips_through_json_exactly() -> None:
    ev = Evidence(harness="codex", cwd="/w", session_id="s")
    ev.issue_shell("a", "sed -i s/x/y/ f.py && pytest", ev.next_pos(10))
    ev.resolve_shell("a", exit_code=0)
    ev.issue_shell("b", "npm test", ev.next_pos(20))
    ev.resolve_shell("b", background="bg1")
    again = Evidence.from_json(ev.to_json())
    assert again == ev


def test_a_state_of_another_version_is_refused() -> None:
    ev = Evidence(harness="codex")
    text = ev.to_json().replace('"version":1', '"version":99')
    try:
        Evidence.from_json(text)
    except ValueError:
        return
    raise AssertionError("another version was accepted")


def test_check_after_write_of_the_same_line_is_after_the_change() -> None:
    ev = Evidence(harness="claude-code")
    ev.issue_shell("a", "sed -i s/x/y/ f.py && pytest", ev.next_pos(1))
    ev.resolve_shell("a", exit_code=0)
    assert ev.last_change is not None
    assert ev.checks[0].pos > ev.last_change
    ev.issue_shell("b", "pytest && sed -i s/x/y/ g.py", ev.next_pos(2))
    ev.resolve_shell("b", exit_code=0)
    assert ev.checks[1].pos < ev.last_change


def test_timestamps_never_go_backwards() -> None:
    ev = Evidence(harness="codex")
    first = ev.next_pos(1000)
    second = ev.next_pos(500)
    assert second > first
    assert second[0] == 1000


def test_pending_checks_of_unanswered_calls_are_reported() -> None:
    ev = Evidence(harness="claude-code")
    ev.issue_shell("a", "pytest", ev.next_pos(1))
    assert [(c.kind, c.status) for c in ev.pending_checks()] == [("test", "pending")]


def test_caps_hold_and_pending_checks_are_kept_longest() -> None:
    ev = Evidence(harness="claude-code", cwd="/w")
    ev.issue_shell("bg", "pytest", ev.next_pos(1))
    ev.resolve_shell("bg", background="b1")
    for i in range(GATE_CHECKS_KEPT + 10):
        ref = f"t{i}"
        ev.issue_shell(ref, "ruff check .", ev.next_pos(i))
        ev.resolve_shell(ref, exit_code=0)
    assert len(ev.checks) == GATE_CHECKS_KEPT
    assert any(c.status == "pending" for c in ev.checks)
    for i in range(GATE_PENDING_MAX + 5):
        ev.issue_edit(f"e{i}", [f"/w/f{i}.py"], ev.next_pos(1))
    assert len(ev.pending) <= GATE_PENDING_MAX
    for i in range(GATE_FILES_KEPT + 7):
        ev.change(ev.next_pos(1), [f"/w/g{i}.py"])
    assert len(ev.files) == GATE_FILES_KEPT
    assert ev.files_written() == GATE_FILES_KEPT + 7


def test_scratch_and_harness_state_are_not_artifacts() -> None:
    assert not is_artifact_path("/var/tmp/x", "/home/u/r")
    assert not is_artifact_path("/home/u/.codex/sessions/a.jsonl", "/home/u/r")
    assert is_artifact_path("/home/u/other/x.py", "/home/u/r")
    assert is_artifact_path("(apply_patch)", "")
