"""The slim task-stop path's pieces, each held to what it stands in for in the full hook.

The whole path is compared with the full hook in ``tests/taskcli/test_task_stop.py``.
"""

from __future__ import annotations

import contextlib
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


def test_the_strict_parse_accepts_only_what_parse_json_accepts_with_the_same_tree():
    from taskcore.collector.quickstop import UndecidedError, strict_json
    from taskcore.errors import TaskError
    from taskcore.jsontext import parse_json

    deep = b"[" * 64 + b"]" * 64
    for raw in [
        b'{"a": [1, 2.5, "x", null, true]}',
        b'{"a": 1, "a": 2}',
        b'{"a": NaN}',
        b'{"a": 1e400}',
        b'{"a": "\\ud800"}',
        b'{"a": "\\ud83d\\ude00"}',
        b"\xef\xbb\xbf{}",
        b'{"a": "\xff"}',
        deep,
        b"[" + deep + b"]",
        b"[1] [2]",
    ]:
        try:
            expected: Any = parse_json(raw, max_bytes=1 << 24)
        except TaskError:
            expected = "refused"
        try:
            got: Any = strict_json(raw)
        except UndecidedError:
            continue  # the full hook judges it
        assert got == expected


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


@pytest.mark.parametrize(
    "data",
    [b"tok\n", b"  tok  ", b"", b"\n", b"tok\r\n", b"a\rb", b"\xff", b"t" * 5000, b"t\x00k"],
)
def test_the_token_read_is_the_full_hooks_where_it_answers(tmp_path, data):
    from taskcore.collector.quickstop import UndecidedError, read_token
    from taskcore.errors import TaskError
    from taskcore.tokenfile import read_token_file

    path = tmp_path / "t.token"
    path.write_bytes(data)
    try:
        expected: Any = read_token_file(path)
    except TaskError:
        expected = "refused"
    with contextlib.suppress(UndecidedError):  # allowed: the full hook reads it
        assert read_token(str(path)) == expected
    with pytest.raises(UndecidedError):
        read_token(str(tmp_path / "missing"))


@pytest.mark.parametrize(
    "data", [None, b"0", b"3", b" 3\n", b"+3", b"3_0", b"-1", b"x", b"7", b"8", b"3\r\n", b"\xff"]
)
def test_the_counter_read_is_the_full_hooks_where_it_answers(tmp_path, data):
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
        with pytest.raises(UndecidedError):
            slim(str(path))
        return
    with contextlib.suppress(UndecidedError):  # allowed: the full hook reads it
        assert slim(str(path)) == expected
