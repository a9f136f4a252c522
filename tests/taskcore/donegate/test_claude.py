"""The Claude Code reader: tool results in every shape, prompts, notifications, robustness."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from taskcore.donegate.claude import feed, parse_ts, task_notification
from taskcore.donegate.evidence import Evidence

from tests.taskcore.donegate.support import check_fed, check_unreadable_line


def line(rec: dict[str, Any]) -> bytes:
    return json.dumps(rec).encode()


def bash(ev: Evidence, tid: str, command: str) -> None:
    feed(
        ev,
        line(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Bash",
                            "input": {"command": command},
                        }
                    ]
                },
            }
        ),
    )


def result(
    ev: Evidence,
    tid: str,
    content: Any,
    *,
    is_error: bool | None = None,
    tur: Any = None,
    **extra: Any,
) -> None:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    rec: dict[str, Any] = {"type": "user", "message": {"content": [block]}, **extra}
    if tur is not None:
        rec["toolUseResult"] = tur
    feed(ev, line(rec))


def statuses(ev: Evidence) -> list[tuple[str, str, int | None]]:
    return [(c.kind, c.status, c.exit) for c in ev.checks]


def test_object_tool_use_result_is_a_pass() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    result(
        ev,
        "t1",
        "3 passed",
        is_error=False,
        tur={"stdout": "3 passed", "stderr": "", "interrupted": False, "isImage": False},
    )
    assert statuses(ev) == [("test", "passed", 0)]


def test_string_tool_use_result_carries_the_exit_code() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "cargo test")
    result(
        ev,
        "t1",
        "Exit code 101\nthread panicked",
        is_error=True,
        tur="Error: Exit code 101\nthread panicked",
    )
    assert statuses(ev) == [("test", "failed", 101)]


def test_exit_code_in_a_text_block_list_without_tool_use_result() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "npm test")
    result(ev, "t1", [{"type": "text", "text": "Exit code 2\nnpm ERR!"}], is_error=True)
    assert statuses(ev) == [("test", "failed", 2)]


def test_error_without_a_code_is_a_failure_and_absent_result_shape_is_a_pass() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    result(ev, "t1", "boom", is_error=True)
    bash(ev, "t2", "ruff check .")
    result(ev, "t2", [{"type": "text", "text": "All checks passed!"}])
    assert statuses(ev) == [("test", "failed", 1), ("lint", "passed", 0)]


def test_denied_call_never_ran_and_interrupted_call_did_not_pass() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    result(
        ev,
        "t1",
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        is_error=True,
        tur="User rejected tool use",
    )
    bash(ev, "t2", "pytest -x")
    result(
        ev,
        "t2",
        "[Request interrupted by user for tool use]",
        is_error=True,
        tur={"stdout": "", "stderr": "", "interrupted": True, "isImage": False},
    )
    assert statuses(ev) == [("test", "interrupted", None)]
    assert ev.checks_run() == 1


def test_tool_use_error_means_the_command_never_ran() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    result(
        ev,
        "t1",
        "<tool_use_error>InputValidationError: command missing</tool_use_error>",
        is_error=True,
    )
    assert ev.checks == []


def test_background_run_is_pending_until_its_notification() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "npm test")
    result(
        ev,
        "t1",
        "Command running in background with ID: bx1.",
        tur={"stdout": "", "stderr": "", "interrupted": False, "backgroundTaskId": "bx1"},
    )
    assert statuses(ev) == [("test", "pending", None)]
    note = (
        "<task-notification>\n<task-id>bx1</task-id>\n<status>failed</status>\n<summary>"
        'Background command "npm test" failed with exit code 1</summary>\n'
        "</task-notification>"
    )
    feed(ev, line({"type": "queue-operation", "operation": "enqueue", "content": note}))
    assert statuses(ev) == [("test", "failed", 1)]


def test_notification_as_attachment_or_user_message_resolves_too() -> None:
    for wrap in (
        lambda n: {"type": "attachment", "attachment": {"type": "queued_command", "prompt": n}},
        lambda n: {"type": "user", "message": {"role": "user", "content": n}},
    ):
        ev = Evidence(harness="claude-code")
        bash(ev, "t1", "make test")
        result(
            ev, "t1", "Command running in background with ID: b9.", tur={"backgroundTaskId": "b9"}
        )
        feed(
            ev,
            line(
                wrap(
                    "<task-notification><task-id>b9</task-id><status>completed"
                    "</status></task-notification>"
                )
            ),
        )
        assert statuses(ev) == [("test", "passed", 0)]
        assert ev.prompts == 0


def test_only_real_prompts_count() -> None:
    ev = Evidence(harness="claude-code")
    for rec in (
        {"type": "user", "message": {"role": "user", "content": "fix the bug"}},
        {"type": "user", "isMeta": True, "message": {"content": "Stop hook feedback: run it"}},
        {"type": "user", "message": {"content": "Stop hook feedback:\nplease run the tests"}},
        {"type": "user", "isCompactSummary": True, "message": {"content": "Summary: ..."}},
        {"type": "user", "message": {"content": "[Request interrupted by user]"}},
        {"type": "user", "message": {"content": [{"type": "text", "text": "and the docs"}]}},
        {"type": "user", "message": {"content": "<system-reminder>x</system-reminder>"}},
    ):
        feed(ev, line(rec))
    assert ev.prompts == 2
    assert ev.last_prompt == "and the docs"


def test_edits_count_only_when_they_succeeded() -> None:
    ev = Evidence(harness="claude-code", cwd="/w/repo")
    for tid, ok in (("e1", True), ("e2", False)):
        feed(
            ev,
            line(
                {
                    "type": "assistant",
                    "message": {
                        "content": [
                            {
                                "type": "tool_use",
                                "id": tid,
                                "name": "Edit",
                                "input": {
                                    "file_path": f"/w/repo/{tid}.py",
                                    "old_string": "a",
                                    "new_string": "b",
                                },
                            }
                        ]
                    },
                }
            ),
        )
        result(
            ev,
            tid,
            "ok" if ok else "<tool_use_error>String not found</tool_use_error>",
            is_error=not ok,
        )
    assert ev.files == ["/w/repo/e1.py"]


def test_sidechain_records_are_skipped_in_a_main_file_but_read_in_a_subagent_file() -> None:
    rec = {
        "type": "assistant",
        "isSidechain": True,
        "message": {"content": [{"type": "text", "text": "Done."}]},
    }
    main, sub = Evidence(harness="claude-code"), Evidence(harness="claude-code", subagent=True)
    feed(main, line(rec))
    feed(sub, line(rec))
    assert (main.last_text, sub.last_text) == ("", "Done.")


def test_compaction_boundary_is_counted_and_evidence_survives_it() -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    result(ev, "t1", "ok", is_error=False)
    feed(
        ev,
        line(
            {
                "type": "system",
                "subtype": "compact_boundary",
                "compactMetadata": {"trigger": "auto", "preTokens": 155025},
            }
        ),
    )
    assert ev.compactions == 1
    assert statuses(ev) == [("test", "passed", 0)]


def test_big_tool_results_of_unknown_calls_are_skipped_without_parsing() -> None:
    ev = Evidence(harness="claude-code")
    big = line(
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "read-1", "content": "x" * 10000}
                ]
            },
        }
    )
    feed(ev, big)
    assert ev.skipped_lines == 1
    assert ev.bad_lines == 0


def test_task_notification_statuses() -> None:
    assert task_notification(
        "<task-notification><task-id>a</task-id><status>killed</status></task-notification>"
    ) == ("a", None, True)
    assert (
        task_notification(
            "<task-notification><task-id>a</task-id><status>running</status></task-notification>"
        )
        is None
    )
    assert task_notification("no notification") is None


def test_timestamps_parse_or_are_none() -> None:
    assert parse_ts("2026-09-20T10:00:03.000Z") == 1789898403000
    assert parse_ts("yesterday") is None
    assert parse_ts(12) is None


@given(st.binary(max_size=400))
def test_arbitrary_bytes_are_one_line_and_change_nothing_unless_they_are_a_record(
    data: bytes,
) -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    before = Evidence.from_json(ev.to_json())
    feed(ev, data)
    check_fed(before, ev, pending_id="t1")
    try:
        readable = isinstance(json.loads(data), dict)
    except (ValueError, RecursionError):
        readable = False
    if not readable:
        check_unreadable_line(before, ev)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "message",
                    "content",
                    "tool_use_id",
                    "id",
                    "name",
                    "input",
                    "command",
                    "toolUseResult",
                    "is_error",
                    "text",
                    "isMeta",
                    "timestamp",
                    "subtype",
                    "attachment",
                    "prompt",
                    "isSidechain",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@given(json_values)
def test_any_record_keeps_the_evidence_whole_bounded_and_restorable(value: object) -> None:
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    before = Evidence.from_json(ev.to_json())
    feed(ev, json.dumps(value).encode())
    check_fed(before, ev, pending_id="t1")
    if not isinstance(value, dict):
        check_unreadable_line(before, ev)


@given(st.sampled_from([0, 1, 2, None]), json_values)
def test_a_result_for_the_pending_call_decides_it_whatever_else_the_record_holds(
    exit_code: int | None, noise: object
) -> None:
    # The tool result of t1 with the exit code in its text, beside any other fields: exactly
    # one check, at the call's position, whose status follows the exit code.
    ev = Evidence(harness="claude-code")
    bash(ev, "t1", "pytest")
    before = Evidence.from_json(ev.to_json())
    if exit_code is None:
        text, tur = "[Request interrupted by user for tool use]", {"interrupted": True}
    else:
        text, tur = f"Exit code {exit_code}\nout", None
    result(ev, "t1", text, is_error=exit_code != 0, tur=tur, extra_field=noise)
    check_fed(before, ev, pending_id="t1")
    assert "t1" not in ev.pending
    [check] = ev.checks
    assert (check.kind, check.cmd) == ("test", "pytest")
    expected = {0: "passed", None: "interrupted"}.get(exit_code, "failed")
    assert check.status == expected


def _by_datetime(value: str) -> int | None:
    """The reference :func:`parse_ts` (what it returned before its datetime-free path)."""
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


_STAMPS = st.datetimes(
    min_value=datetime(1, 1, 1),
    max_value=datetime(9999, 12, 31, 23, 59, 59, 999999),
)


@given(_STAMPS, st.sampled_from(["", "ms", "us"]))
def test_the_harness_stamp_form_reads_as_datetime_reads_it(when, precision):
    text = f"{when.year:04d}-{when:%m-%dT%H:%M:%S}"
    if precision == "ms":
        text += f".{when.microsecond // 1000:03d}"
    elif precision == "us":
        text += f".{when.microsecond:06d}"
    assert parse_ts(text + "Z") == _by_datetime(text + "Z")


@given(
    st.text(alphabet="0123456789-:TZ.+ ", min_size=18, max_size=30)
    | st.sampled_from(
        [
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "0000-01-01T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T23:59:60Z",
            "2026-01-01T10:00:00.5Z",
            "2026-01-01 10:00:00.000Z",
            "2026-01-01T10:00:00.000+02:00",
            "\uff12026-01-01T00:00:00Z",
        ]
    )
)
def test_any_other_text_reads_as_datetime_reads_it(text):
    assert parse_ts(text) == _by_datetime(text)
