"""JSON settings edits: our keys and handlers change, every other key and handler stays."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.agentsetup import jsonedit
from taskcore.agentsetup.harness import is_ours
from taskcore.errors import ErrorCode, TaskError

GATE = "/venv/bin/agent-task gate-stop --harness claude-code"


def ours(command: object) -> bool:
    return is_ours(command, "gate-stop", "claude-code", "Stop")


def test_indentation_and_key_order_of_the_file_are_kept():
    text = '{\n\t"b": 1,\n\t"a": [1, 2]\n}\n'
    data = jsonedit.load(text, "f")
    jsonedit.set_key(data, ("c",), True)
    assert (
        jsonedit.dump(data, like=text)
        == '{\n\t"b": 1,\n\t"a": [\n\t\t1,\n\t\t2\n\t],\n\t"c": true\n}\n'
    )


@pytest.mark.parametrize("text", ["[]", "not json", '"x"', "{,}"])
def test_a_file_that_is_not_a_json_object_is_refused(text):
    with pytest.raises(TaskError) as info:
        jsonedit.load(text, "settings.json")
    assert info.value.code is ErrorCode.INVALID_VALUE
    assert "nothing was changed" in info.value.message


def test_a_missing_or_empty_file_is_an_empty_object():
    assert jsonedit.load(None, "f") == {}
    assert jsonedit.load("  \n", "f") == {}


def test_setting_a_key_through_a_value_that_is_not_an_object_is_refused():
    with pytest.raises(TaskError, match="'mcpServers' in f is not an object"):
        jsonedit.set_key({"mcpServers": []}, ("mcpServers", "x"), 1, "f")


def test_removing_a_key_drops_the_objects_it_empties_and_nothing_else():
    data = {"mcpServers": {"agent-task": {"type": "http"}}, "other": {}}
    assert jsonedit.remove_key(data, ("mcpServers", "agent-task"))
    assert data == {"other": {}}
    assert not jsonedit.remove_key(data, ("mcpServers", "agent-task"))


def test_our_handler_is_added_once_and_updated_in_place():
    data = {
        "hooks": {
            "Stop": [
                {"hooks": [{"type": "command", "command": "my-notifier"}]},
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "/old/agent-task gate-stop --harness claude-code",
                        }
                    ]
                },
            ]
        }
    }
    assert jsonedit.add_handler(data, "Stop", GATE, 30, ours)
    assert data["hooks"]["Stop"][1]["hooks"][0] == {
        "type": "command",
        "command": GATE,
        "timeout": 30,
    }
    before = copy.deepcopy(data)
    assert not jsonedit.add_handler(data, "Stop", GATE, 30, ours)
    assert data == before
    assert data["hooks"]["Stop"][0] == {"hooks": [{"type": "command", "command": "my-notifier"}]}


def test_a_second_handler_of_ours_is_removed_and_a_shared_group_keeps_the_others():
    data = {
        "hooks": {
            "Stop": [
                {"matcher": "", "hooks": [{"command": GATE}, {"command": "mine"}]},
                {"hooks": [{"command": GATE}]},
            ]
        }
    }
    assert jsonedit.add_handler(data, "Stop", GATE, 30, ours)
    assert data["hooks"]["Stop"] == [
        {
            "matcher": "",
            "hooks": [{"command": GATE, "type": "command", "timeout": 30}, {"command": "mine"}],
        }
    ]
    assert jsonedit.remove_handlers(data, "Stop", ours)
    assert data == {"hooks": {"Stop": [{"matcher": "", "hooks": [{"command": "mine"}]}]}}


def test_hooks_of_the_wrong_shape_are_refused():
    with pytest.raises(TaskError, match="'hooks' in f is not an object"):
        jsonedit.add_handler({"hooks": []}, "Stop", GATE, 30, ours, "f")
    with pytest.raises(TaskError, match=r"'hooks\.Stop' in f is not a list"):
        jsonedit.add_handler({"hooks": {"Stop": {}}}, "Stop", GATE, 30, ours, "f")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
_other_handler = st.fixed_dictionaries(
    {
        "type": st.just("command"),
        "command": st.sampled_from(["lint", "agent-task gate-stop --harness codex", "notify"]),
    }
)
_settings = st.fixed_dictionaries(
    {
        "hooks": st.dictionaries(
            st.sampled_from(["Stop", "SubagentStop", "PreToolUse"]),
            st.lists(
                st.fixed_dictionaries({"hooks": st.lists(_other_handler, max_size=3)}), max_size=3
            ),
            max_size=3,
        )
    },
    optional={
        "model": _json,
        "env": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
    },
)


@given(_settings)
def test_add_then_remove_gives_back_the_settings_and_adding_twice_is_adding_once(settings):
    data = copy.deepcopy(settings)
    jsonedit.add_handler(data, "Stop", GATE, 30, ours)
    once = copy.deepcopy(data)
    assert not jsonedit.add_handler(data, "Stop", GATE, 30, ours)
    assert data == once
    assert jsonedit.handlers(data, "Stop", ours) == [
        {"type": "command", "command": GATE, "timeout": 30}
    ]
    assert jsonedit.remove_handlers(data, "Stop", ours)
    # Only our handler went: the others (the other harness's gate too) are as they were,
    # apart from groups and events that had nothing else in them.
    expected = copy.deepcopy(settings)
    if not expected["hooks"].get("Stop"):
        expected["hooks"].pop("Stop", None)
    if not expected["hooks"]:
        expected.pop("hooks")
    assert data == expected
    assert json.loads(jsonedit.dump(data)) == data
