"""The Codex rollout reader: exec_command, legacy shell, apply_patch, late exit codes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from taskcore.donegate.codex import feed, patch_files
from taskcore.donegate.evidence import Evidence

from tests.taskcore.donegate.support import check_fed, check_unreadable_line


def rec(kind: str, payload: dict[str, Any]) -> bytes:
    return json.dumps(
        {"timestamp": "2026-09-20T10:00:00.000Z", "type": kind, "payload": payload}
    ).encode()


def call(ev: Evidence, cid: str, name: str, args: dict[str, Any]) -> None:
    feed(
        ev,
        rec(
            "response_item",
            {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": cid},
        ),
    )


def output(ev: Evidence, cid: str, text: str) -> None:
    feed(ev, rec("response_item", {"type": "function_call_output", "call_id": cid, "output": text}))


def statuses(ev: Evidence) -> list[tuple[str, str, int | None]]:
    return [(c.kind, c.status, c.exit) for c in ev.checks]


def test_session_meta_sets_id_cwd_and_subagent_parent() -> None:
    ev = Evidence(harness="codex")
    feed(
        ev,
        rec(
            "session_meta",
            {
                "id": "019a",
                "cwd": "/w/web",
                "source": {"subagent": {"thread_spawn": {"parent_thread_id": "0199", "depth": 1}}},
            },
        ),
    )
    assert (ev.session_id, ev.cwd, ev.subagent, ev.parent_session_id) == (
        "019a",
        "/w/web",
        True,
        "0199",
    )


def test_exec_command_end_gives_the_exit_code() -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "exec_command", {"cmd": "pytest -q"})
    feed(ev, rec("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 1}))
    output(ev, "c1", "Process exited with code 1")
    assert statuses(ev) == [("test", "failed", 1)]


def test_legacy_shell_call_with_json_metadata() -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "shell", {"command": ["bash", "-lc", "cargo test"]})
    output(ev, "c1", json.dumps({"output": "ok", "metadata": {"exit_code": 0}}))
    assert statuses(ev) == [("test", "passed", 0)]


def test_long_running_command_stays_pending_until_an_end_event() -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "exec_command", {"cmd": "npm test"})
    output(ev, "c1", "Process running with session ID 77\nOutput:\n")
    assert statuses(ev) == [("test", "pending", None)]
    feed(ev, rec("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 0}))
    assert statuses(ev) == [("test", "passed", 0)]


def test_poll_that_is_still_running_does_not_resolve() -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "exec_command", {"cmd": "npm test"})
    output(ev, "c1", "Process running with session ID 5")
    call(ev, "p1", "write_stdin", {"session_id": 5, "chars": ""})
    output(ev, "p1", "Process running with session ID 5\nOutput:\nstill going")
    assert statuses(ev) == [("test", "pending", None)]


def test_apply_patch_changes_the_named_files_unless_it_failed() -> None:
    ev = Evidence(harness="codex", cwd="/w/web")
    body = "*** Begin Patch\n*** Add File: src/new.ts\n+x\n*** End Patch"
    feed(
        ev,
        rec(
            "response_item",
            {"type": "custom_tool_call", "name": "apply_patch", "call_id": "a1", "input": body},
        ),
    )
    feed(
        ev,
        rec(
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": "a1",
                "output": "Success. Updated the following files:\nA src/new.ts",
            },
        ),
    )
    feed(
        ev,
        rec(
            "response_item",
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "a2",
                "input": body.replace("new", "bad"),
            },
        ),
    )
    feed(
        ev,
        rec(
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": "a2",
                "output": "apply_patch verification failed: no such file",
            },
        ),
    )
    assert ev.files == ["src/new.ts"]


def test_apply_patch_through_the_shell_is_an_edit() -> None:
    ev = Evidence(harness="codex")
    call(
        ev,
        "s1",
        "shell",
        {
            "command": [
                "apply_patch",
                "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch",
            ]
        },
    )
    output(ev, "s1", json.dumps({"output": "Done!", "metadata": {"exit_code": 0}}))
    assert ev.files == ["a.py"]


def test_rejected_command_never_ran_and_aborted_turn_interrupts() -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "exec_command", {"cmd": "pytest"})
    output(ev, "c1", "exec command rejected by user")
    call(ev, "c2", "exec_command", {"cmd": "ruff check ."})
    feed(ev, rec("event_msg", {"type": "turn_aborted", "reason": "interrupted"}))
    assert statuses(ev) == [("lint", "interrupted", None)]


def test_prompts_are_counted_once_and_wrappers_are_not_prompts() -> None:
    ev = Evidence(harness="codex")
    feed(
        ev,
        rec(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}
                ],
            },
        ),
    )
    feed(
        ev,
        rec(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix the bug"}],
            },
        ),
    )
    feed(ev, rec("event_msg", {"type": "user_message", "message": "fix the bug"}))
    feed(ev, rec("event_msg", {"type": "user_message", "message": "and the docs"}))
    assert ev.prompts == 2


def test_a_stop_hook_reason_fed_back_is_not_a_new_prompt() -> None:
    """Codex 0.171 writes a Stop hook's block reason as a user message wrapped in
    ``<hook_prompt>`` (seen in a real rollout); counting it would reset the budget per hold."""
    ev = Evidence(harness="codex")
    feed(
        ev,
        rec(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "add calc.py"}],
            },
        ),
    )
    feed(
        ev,
        rec(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": '<hook_prompt hook_run_id="stop:0:/p/.codex/hooks.json">done gate'
                        "  ○ this session is at rung 2 of 5</hook_prompt>",
                    }
                ],
            },
        ),
    )
    assert ev.prompts == 1


def test_agent_text_from_messages_and_task_complete() -> None:
    ev = Evidence(harness="codex")
    feed(ev, rec("event_msg", {"type": "agent_message", "message": "Working on it"}))
    feed(ev, rec("event_msg", {"type": "task_complete", "last_agent_message": "All done."}))
    assert ev.last_text == "All done."


def test_patch_files_reads_headers_and_moves() -> None:
    body = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n*** Delete File: c.py\n"
        "*** End Patch"
    )
    assert patch_files(body) == ["a.py", "b.py", "c.py"]


@given(st.binary(max_size=400))
def test_arbitrary_bytes_are_one_line_and_change_nothing_unless_they_are_a_record(
    data: bytes,
) -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "exec_command", {"cmd": "pytest"})
    before = Evidence.from_json(ev.to_json())
    feed(ev, data)
    check_fed(before, ev, pending_id="c1")
    try:
        readable = isinstance(json.loads(data), dict)
    except (ValueError, RecursionError):
        readable = False
    if not readable:
        check_unreadable_line(before, ev)


payloads = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "name",
                    "arguments",
                    "call_id",
                    "output",
                    "cmd",
                    "command",
                    "exit_code",
                    "message",
                    "role",
                    "content",
                    "changes",
                    "success",
                    "input",
                    "session_id",
                    "source",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@given(
    st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "compacted"]),
    payloads,
)
def test_any_payload_keeps_the_evidence_whole_bounded_and_restorable(
    kind: str, payload: object
) -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "exec_command", {"cmd": "pytest"})
    before = Evidence.from_json(ev.to_json())
    feed(ev, json.dumps({"type": kind, "payload": payload}).encode())
    check_fed(before, ev, pending_id="c1")
    if not isinstance(payload, dict):  # a record without a payload object is not read
        after = Evidence.from_json(ev.to_json())
        after.lines = before.lines
        assert after == before


@given(st.sampled_from([0, 1, 2]), payloads)
def test_the_end_event_of_the_pending_call_decides_it_whatever_else_it_holds(
    exit_code: int, noise: object
) -> None:
    ev = Evidence(harness="codex")
    call(ev, "c1", "exec_command", {"cmd": "pytest"})
    before = Evidence.from_json(ev.to_json())
    end = {"type": "exec_command_end", "call_id": "c1", "exit_code": exit_code, "x": noise}
    feed(ev, rec("event_msg", end))
    check_fed(before, ev, pending_id="c1")
    output(ev, "c1", f"Process exited with code {exit_code}")  # the output after the end
    assert "c1" not in ev.pending
    assert statuses(ev) == [("test", "passed" if exit_code == 0 else "failed", exit_code)]
