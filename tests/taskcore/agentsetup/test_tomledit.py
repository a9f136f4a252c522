"""TOML edits of one table: every other byte stays, and the edit checks itself with tomllib."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.agentsetup.tomledit import basic_string, get_table, remove_table, set_table
from taskcore.errors import ErrorCode, TaskError

KEYS = ("mcp_servers", "agent-task")
OURS = {"url": "http://127.0.0.1:8787/mcp", "http_headers_helper": "/bin/agent-task agent headers"}

USER_FILE = """\
# my codex config
model = "o3"   # the model
check_for_update_on_startup = false

[mcp_servers.docs]
url = "https://docs.example/mcp"
bearer_token_env_var = "DOCS"

[projects."/home/me/app"]
trust_level = "trusted"
"""


def test_a_new_table_goes_at_the_end_and_every_other_line_stays():
    after = set_table(USER_FILE, KEYS, OURS)
    assert after.startswith(USER_FILE)
    assert after[len(USER_FILE) :] == (
        "\n[mcp_servers.agent-task]\n"
        'url = "http://127.0.0.1:8787/mcp"\n'
        'http_headers_helper = "/bin/agent-task agent headers"\n'
    )
    assert get_table(after, KEYS) == OURS
    assert set_table(after, KEYS, OURS) is after or set_table(after, KEYS, OURS) == after


def test_an_existing_table_keeps_its_own_settings_comments_and_sub_tables():
    text = USER_FILE + (
        '\n[mcp_servers."agent-task"]  # ours\n'
        "# how long to wait\n"
        "startup_timeout_sec = 20\n"
        'bearer_token_env_var = "AGENT_TASK_TOKEN"\n'
        'url = "http://old:1/mcp"\n'
        "\n[mcp_servers.agent-task.tools.agenttask_claimNext]\n"
        'approval_mode = "approve"\n'
    )
    after = set_table(text, KEYS, OURS)
    table = get_table(after, KEYS)
    assert table["startup_timeout_sec"] == 20
    assert "bearer_token_env_var" not in table  # a transport key of ours: replaced
    assert table["tools"] == {"agenttask_claimNext": {"approval_mode": "approve"}}
    assert {k: table[k] for k in OURS} == OURS
    assert "# how long to wait\n" in after
    assert '[mcp_servers."agent-task"]  # ours\n' in after
    assert after.startswith(USER_FILE)


def test_remove_takes_the_table_and_its_sub_tables_and_nothing_else():
    with_ours = set_table(USER_FILE, KEYS, OURS)
    with_sub = with_ours + '\n[mcp_servers.agent-task.env]\nA = "1"\n'
    assert remove_table(with_sub, KEYS) == USER_FILE
    assert remove_table(USER_FILE, KEYS) == USER_FILE


def test_lines_that_look_like_headers_inside_values_are_not_headers():
    text = (
        "notes = '''\n[mcp_servers.agent-task]\nurl = \"x\"\n'''\n"
        "matrix = [\n  [1, 2],\n  [3, 4],\n]\n"
        'quoted = "[mcp_servers.agent-task]"\n'
    )
    after = set_table(text, KEYS, OURS)
    assert tomllib.loads(after)["notes"] == '[mcp_servers.agent-task]\nurl = "x"\n'
    assert tomllib.loads(after)["matrix"] == [[1, 2], [3, 4]]
    assert remove_table(after, KEYS) == text


@pytest.mark.parametrize(
    "text",
    [
        'mcp_servers = { agent-task = { url = "x" } }\n',
        '[mcp_servers]\nagent-task = { url = "x" }\n',
        'mcp_servers.agent-task.url = "x"\n',
        '[mcp_servers.agent-task]\nurl = """\nhttp://x/mcp"""\n',
    ],
)
def test_forms_the_edit_cannot_change_safely_are_refused_and_nothing_changes(text):
    with pytest.raises(TaskError) as info:
        set_table(text, KEYS, OURS)
    assert info.value.code is ErrorCode.INVALID_VALUE
    assert "by hand" in info.value.message


def test_an_invalid_file_is_refused():
    with pytest.raises(TaskError, match="not valid TOML"):
        set_table("a = = 1\n", KEYS, OURS)


_value = st.one_of(
    st.integers(-5, 5).map(str),
    st.booleans().map(lambda b: "true" if b else "false"),
    st.text(alphabet="ab []#=\"'\\", max_size=6).map(basic_string),
)
_key = st.sampled_from(["a", "b-c", '"q k"', "x_1"])
_lines = st.lists(
    st.one_of(
        st.tuples(_key, _value).map(lambda kv: f"{kv[0]} = {kv[1]}"),
        st.just("# a comment [mcp_servers.agent-task]"),
        st.just(""),
    ),
    max_size=4,
)
_tables = st.lists(
    st.tuples(st.sampled_from(["[t]", "[mcp_servers.other]", "[u.v]", "[[arr]]"]), _lines),
    max_size=4,
)


@given(_lines, _tables)
def test_set_then_remove_gives_back_the_document_and_set_is_idempotent(top, tables):
    seen: set[str] = set()
    parts = []
    for line in top:
        key = line.split(" = ")[0] if " = " in line else None
        if key is None or key not in seen:
            parts.append(line + "\n")
            seen.add(key or "")
    for header, lines in tables:
        if header in seen and not header.startswith("[["):
            continue
        seen.add(header)
        parts.append(header + "\n")
        keys: set[str] = set()
        for line in lines:
            key = line.split(" = ")[0] if " = " in line else None
            if key is None or key not in keys:
                parts.append(line + "\n")
                keys.add(key or "")
    text = "".join(parts)
    before = tomllib.loads(text)
    after = set_table(text, KEYS, OURS)
    assert get_table(after, KEYS) == OURS
    assert after.startswith(text.rstrip("\n"))
    assert set_table(after, KEYS, OURS) == after
    removed = remove_table(after, KEYS)
    assert tomllib.loads(removed) == before
    assert removed.rstrip("\n") == text.rstrip("\n")
