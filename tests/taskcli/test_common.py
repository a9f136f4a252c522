import io
import json
import sys

import httpx
import pytest
from taskcli.common import ServiceClient, exit_table, human, read_json_argument
from taskcore import ErrorCode, ErrorKind, TaskError


def test_exit_table_names_every_exit_status_of_the_error_kinds():
    table = exit_table()
    for status in {kind.exit_status for kind in ErrorKind} | {0, 2}:
        assert f"; {status} " in table or table.startswith(f"Exit status: {status} ")


def test_human_rendering_is_indented_key_value_lines():
    text = human({"a": 1, "b": {"c": [1, {"d": None}]}, "e": [], "f": "x"})
    assert text.splitlines() == ["a: 1", "b:", "  c:", "    - 1", "    - d: null", "e: []", "f: x"]


def test_json_argument_inline_file_and_stdin(tmp_path, monkeypatch):
    assert read_json_argument(None) == b"{}"
    assert read_json_argument('{"a": 1}') == b'{"a": 1}'
    path = tmp_path / "req.json"
    path.write_bytes(b'{"from": "file"}')
    assert read_json_argument(f"@{path}") == b'{"from": "file"}'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"from": "stdin"}')))
    assert read_json_argument("-") == b'{"from": "stdin"}'


def test_json_argument_from_a_missing_file_is_bad_input(tmp_path):
    with pytest.raises(TaskError) as info:
        read_json_argument(f"@{tmp_path / 'missing'}")
    assert info.value.code is ErrorCode.BAD_INPUT


def test_unreachable_service_is_service_unreachable(monkeypatch):
    monkeypatch.setenv("AGENT_TASK_TOKEN", "atk_env")
    with pytest.raises(TaskError) as info:
        ServiceClient("http://127.0.0.1:1", None, timeout=5).verb("x", b"{}")
    assert info.value.code is ErrorCode.SERVICE_UNREACHABLE
    assert info.value.code.kind.exit_status == 8


def _client_answering(monkeypatch, status, content):
    def fake_post(self, url, **kwargs):
        return httpx.Response(status, content=content)

    monkeypatch.setattr(httpx.Client, "post", fake_post)
    monkeypatch.setenv("AGENT_TASK_TOKEN", "atk_env")
    return ServiceClient("http://service", None)


def test_error_bodies_become_their_codes(monkeypatch):
    body = json.dumps({"error": "no such task", "code": "NOT_FOUND"}).encode()
    with pytest.raises(TaskError) as info:
        _client_answering(monkeypatch, 404, body).verb("agenttask.get", b"{}")
    assert info.value.code is ErrorCode.NOT_FOUND
    assert info.value.message == "no such task"


@pytest.mark.parametrize(
    ("status", "content"),
    [
        (502, b"<html>bad gateway</html>"),
        (200, b"[1, 2]"),
        (500, b'{"code": "NOPE", "error": "x"}'),
    ],
)
def test_answers_that_are_not_the_documented_body_are_malformed(monkeypatch, status, content):
    with pytest.raises(TaskError) as info:
        _client_answering(monkeypatch, status, content).verb("x", b"{}")
    assert info.value.code is ErrorCode.MALFORMED_RESPONSE


def test_workflow_calls_need_a_route():
    with pytest.raises(TaskError) as info:
        ServiceClient("http://service", None).workflow(None, "p", "next", b"{}")
    assert info.value.code is ErrorCode.BAD_INPUT


def test_no_token_names_the_token_file_option_not_the_http_header(monkeypatch):
    monkeypatch.delenv("AGENT_TASK_TOKEN", raising=False)
    with pytest.raises(TaskError) as info:
        ServiceClient("http://127.0.0.1:1", None).verb("agenttask.list", b"{}")
    assert info.value.code is ErrorCode.UNAUTHENTICATED
    assert "--token-file" in info.value.message
    assert "AGENT_TASK_TOKEN_FILE" in info.value.message
    assert "Authorization" not in info.value.message


def test_token_comes_from_the_file_or_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "t"
    path.write_text("atk_file\n")
    monkeypatch.setenv("AGENT_TASK_TOKEN", "atk_env")
    assert ServiceClient("http://s", path).token == "atk_file"
    assert ServiceClient("http://s", None).token == "atk_env"
