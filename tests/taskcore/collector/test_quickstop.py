"""The slim task-stop path's pieces, each held to what it stands in for in the full hook.

The whole path is compared with the full hook in ``tests/taskcli/test_task_stop.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def test_the_answer_parse_and_the_request_body_match_the_json_package():
    from taskcore.collector import quickstop

    for change in ["c1", "é-ü", 'quo"te', "tab\there", "\x00", "\u2028", "😀"]:
        expected = json.dumps(
            {"operation": "qualification", "request": {"version": 1, "change_id": change}},
            ensure_ascii=False,
        ).encode("utf-8")
        assert quickstop.qualification_body(change) == expected
    for raw in [
        b'{"session_id": "s"}',
        b' \n{"a": [1, -2.5e3, true, null, {"b": "\\u00e9\\n"}]}\r\n',
        b'{"a": NaN, "b": Infinity, "c": -Infinity}',
        b'{"big": 123456789012345678901234567890}',
        b'{"a": 1, "a": 2}',
        '{"é": "\u2028"}'.encode(),
    ]:
        got, expected = quickstop.loads(raw), json.loads(raw)
        assert json.dumps(got) == json.dumps(expected)
    for raw in [b'{"a": 1} x', b'{"a": }', b'{"a": "\x01"}', b"{", b"{} {}"]:
        with pytest.raises(ValueError, match=r"Extra data|Expecting|Invalid control"):
            json.loads(raw)
        with pytest.raises(ValueError, match=r"Extra data|Expecting|Invalid control"):
            quickstop.loads(raw)


DEEP = b"[" * 64 + b"]" * 64

# (input, whether the slim parse must decide it). It decides the JSON a Stop payload and a
# qualification answer are made of; anything parse_json refuses, or that only parse_json can
# judge (duplicate keys, non-finite or huge numbers, surrogates, a BOM, bad UTF-8, too deep,
# trailing data), it hands to the full hook, never deciding it differently.
STRICT_CASES = [
    (b"{}", True),
    (b"[]", True),
    (b'"text"', True),
    (b"123", True),
    (b'{"a": [1, 2.5, "x", null, true]}', True),
    (b'{"session_id": "s", "transcript_path": "/t/x.jsonl", "stop_hook_active": false}', True),
    (b'{"a": -12, "b": 0.5e-3, "c": "\\u00e9\\n\\"q\\""}', True),
    ('{"é": "ü 😀"}'.encode(), True),
    (b' {"a": {"b": [[], {}]}} \n', True),
    (DEEP, True),
    (b'{"a": 1, "a": 2}', False),
    (b'{"a": NaN}', False),
    (b'{"a": 1e400}', False),
    (b'{"a": "\\ud800"}', False),
    (b'{"a": "\\ud83d\\ude00"}', False),
    (b"\xef\xbb\xbf{}", False),
    (b'{"a": "\xff"}', False),
    (b"[" + DEEP + b"]", False),
    (b"[1] [2]", False),
]


@pytest.mark.parametrize(("raw", "decides"), STRICT_CASES)
def test_the_strict_parse_accepts_only_what_parse_json_accepts_with_the_same_tree(raw, decides):
    from taskcore.collector.quickstop import UndecidedError, strict_json
    from taskcore.errors import TaskError
    from taskcore.jsontext import parse_json

    try:
        expected: Any = parse_json(raw, max_bytes=1 << 24)
    except TaskError:
        expected = "refused"
    if decides:
        assert strict_json(raw) == expected
    else:
        with pytest.raises(UndecidedError):
            strict_json(raw)


def test_the_strict_parse_decides_the_common_cases():
    # Not a handful: the slim path is only worth having if it decides what Stop hooks send.
    assert sum(decides for _, decides in STRICT_CASES) == 10


def test_the_journal_versions_are_the_ones_this_code_reads():
    from taskcore.collector.quickstop import JOURNAL_NAME, JOURNAL_VERSIONS
    from taskcore.store.storage import JOURNAL_FILENAME, journal_components

    assert {c.name: c.latest for c in journal_components()} == JOURNAL_VERSIONS
    assert JOURNAL_NAME == JOURNAL_FILENAME


def test_the_git_environment_and_status_command_are_the_full_hooks():
    from taskcore.authority.gitrev import git_argv, git_env
    from taskcore.collector.quickstop import IN_PROGRESS, status_argv
    from taskcore.collector.quickstop import git_env as slim_env
    from taskcore.collector.stophook import _IN_PROGRESS

    assert slim_env() == git_env()
    assert status_argv("/w") == git_argv(
        Path("/w"),
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignore-submodules=none",
        lockless=True,
    )
    assert IN_PROGRESS == _IN_PROGRESS


def test_the_counter_file_is_the_full_hooks(tmp_path, monkeypatch):
    from taskcore.collector.quickstop import counter_file
    from taskcore.collector.stophook import counter_path

    monkeypatch.setenv("AGENT_TASK_STOP_DIR", str(tmp_path / "stop"))
    for session in ["s1", "", "é"]:
        assert Path(counter_file(session, "c1")) == counter_path(session, "c1")


# (file bytes, whether the slim read must decide it): a plain token line it reads itself; an
# empty file, a CR in the line or bytes that are not ASCII go to the full hook.
TOKEN_CASES = [
    (b"tok\n", True),
    (b"  tok  ", True),
    (b"t" * 5000, True),
    (b"t\x00k", True),
    (b"", False),
    (b"\n", False),
    (b"tok\r\n", False),
    (b"a\rb", False),
    (b"\xff", False),
]


@pytest.mark.parametrize(("data", "decides"), TOKEN_CASES)
def test_the_token_read_is_the_full_hooks_where_it_answers(tmp_path, data, decides):
    from taskcore.collector.quickstop import UndecidedError, read_token
    from taskcore.errors import TaskError
    from taskcore.tokenfile import read_token_file

    path = tmp_path / "t.token"
    path.write_bytes(data)
    try:
        expected: Any = read_token_file(path)
    except TaskError:
        expected = "refused"
    if decides:
        assert read_token(str(path)) == expected
    else:
        with pytest.raises(UndecidedError):
            read_token(str(path))
    with pytest.raises(UndecidedError):
        read_token(str(tmp_path / "missing"))


def test_the_token_read_decides_most_token_files():
    assert sum(decides for _, decides in TOKEN_CASES) == 4


# (file bytes or None for no file, whether the slim read must decide it): a missing file and
# a small count it reads itself; anything the full hook refuses, a count at the limit or
# beyond, and spellings only int() accepts go to the full hook.
COUNTER_CASES = [
    (None, True),
    (b"0", True),
    (b"3", True),
    (b" 3\n", True),
    (b"+3", True),
    (b"7", True),
    (b"3_0", False),
    (b"-1", False),
    (b"x", False),
    (b"8", False),
    (b"3\r\n", False),
    (b"\xff", False),
]


@pytest.mark.parametrize(("data", "decides"), COUNTER_CASES)
def test_the_counter_read_is_the_full_hooks_where_it_answers(tmp_path, data, decides):
    from taskcore.collector.quickstop import UndecidedError
    from taskcore.collector.quickstop import read_counter as slim
    from taskcore.collector.stophook import CounterError, read_counter
    from taskcore.limits import STOP_CONTINUATIONS_MAX

    path = tmp_path / "c.count"
    if data is not None:
        path.write_bytes(data)
    try:
        expected: Any = read_counter(path)
    except CounterError:
        expected = "refused"
    if expected == "refused" or expected >= STOP_CONTINUATIONS_MAX:
        assert not decides  # the slim path never decides a refusal or the limit
    if decides:
        assert slim(str(path)) == expected
    else:
        with pytest.raises(UndecidedError):
            slim(str(path))


def test_the_counter_read_decides_the_counts_below_the_limit():
    assert sum(decides for _, decides in COUNTER_CASES) == 6
