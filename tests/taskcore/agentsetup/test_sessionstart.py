"""The SessionStart hook's words: the harnesses' ``additionalContext`` shape, bounded, exact calls."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.agentsetup import sessionstart
from taskcore.agentsetup.sessionstart import context, fail_line, goal_of, hook_output, source_of
from taskcore.limits import SESSION_START_GOAL_MAX_CHARS, SESSION_START_TASKS_SHOWN

NOW = 1_700_000_000_000


def lease(n: int, *, phase: dict | None = None, payload: object = None) -> dict:
    return {
        "task": {
            "taskId": f"at_{n:04d}",
            "verb": "agent.run",
            "fence": n + 1,
            "payload": payload if payload is not None else {"goal": f"goal {n}"},
            "lease": {"expiresAtMs": NOW + 272_000, "extensions": 2},
        },
        "lastPhase": phase,
    }


def test_each_held_task_gets_its_id_goal_fence_expiry_phase_and_exact_calls():
    phase = {"phaseIndex": 3, "phaseKey": "tests-written", "createdAtMs": NOW - 60_000}
    text = context(
        {"nowMs": NOW, "leases": [lease(7, phase=phase)], "more": False}, source="resume"
    )
    assert text is not None
    assert "(this session was resumed)" in text.splitlines()[0]
    assert "- task at_0007 (verb agent.run)" in text
    assert 'goal (from its payload): "goal 7"' in text
    assert "fence: 8 " in text
    assert "lease: expires 2023-11-14T22:17:52Z, in 4 min 32 s; renewals used 2 of 4" in text
    assert 'last checkpoint phase: #3 "tests-written" (written 2023-11-14T22:12:20Z)' in text
    assert 'agenttask_checkpoint {"taskId": "at_0007", "fence": 8}' in text
    assert (
        'agenttask_checkpoint {"taskId": "at_0007", "fence": 8, "status": "DONE", '
        '"checkpoint": {"output": {...}}}' in text
    )
    assert 'agenttask_checkpoint_write {"taskId": "at_0007", "fence": 8, "phaseKey"' in text


def test_nothing_held_is_silence():
    assert context({"nowMs": NOW, "leases": [], "more": False}) is None


def test_many_leases_are_counted_past_the_ones_described():
    leases = [lease(n) for n in range(SESSION_START_TASKS_SHOWN + 2)]
    text = context({"nowMs": NOW, "leases": leases, "more": True})
    assert text is not None
    assert text.count("- task at_") == SESSION_START_TASKS_SHOWN
    assert text.splitlines()[-1] == "- and at least 2 more: agenttask_leases lists them"
    assert f"you hold {len(leases)} or more leased tasks" in text


@pytest.mark.parametrize(
    ("payload", "goal"),
    [
        ({"title": "t", "goal": "g"}, "g"),
        ({"summary": "  s  "}, "s"),
        ({"goal": "", "prompt": "p"}, "p"),
        ("text\tgoal", "text goal"),
        ({"n": [1]}, '{"n": [1]}'),
        (None, "(no payload)"),
        ({"goal": "\x1b[31mred\x1b[0m"}, "[31mred [0m"),
    ],
)
def test_the_goal_is_the_payloads_goal_title_summary_or_its_json_on_one_line(payload, goal):
    assert goal_of(payload) == goal


def test_a_long_goal_is_cut():
    assert len(goal_of({"goal": "x" * 5000})) == SESSION_START_GOAL_MAX_CHARS


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"nowMs": NOW, "leases": {}},
        {"nowMs": "1", "leases": [lease(1)]},
        {"nowMs": NOW, "leases": [{"task": {}}]},
        {"nowMs": NOW, "leases": [{"task": {**lease(1)["task"], "fence": "1"}}]},
    ],
)
def test_an_answer_of_another_shape_raises_for_the_one_line(answer):
    with pytest.raises((KeyError, TypeError, ValueError)):
        context(answer)


def test_the_output_is_the_shape_both_harnesses_read():
    assert json.loads(hook_output("a\nb")) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "a\nb"}
    }
    line = fail_line("the service did not answer (ConnectError)")
    assert "\n" not in line
    assert json.loads(line) == {
        "systemMessage": "agent-task: the service did not answer (ConnectError); "
        "the leases this agent holds are unknown"
    }


@given(st.text())
def test_quoting_without_the_json_package_is_json_dumps(text):
    assert sessionstart._quote(text) == json.dumps(text, ensure_ascii=False)
    assert json.loads(hook_output(text))["hookSpecificOutput"]["additionalContext"] == text


@pytest.mark.parametrize(
    ("raw", "source"),
    [
        (b'{"source": "compact", "session_id": "s"}', "compact"),
        (b'{"source": "startup"}', "startup"),
        (b'{"source": "elsewhere"}', None),
        (b"[1]", None),
        (b"", None),
        (b'\xff{"source": "resume"}', None),
    ],
)
def test_the_payloads_source_is_read_and_anything_else_ignored(raw, source):
    assert source_of(raw) == source
