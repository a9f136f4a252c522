import io
import json
import re
import socketserver
import sys
import threading

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


class _Answer(socketserver.BaseRequestHandler):
    """Reads one request per exchange and writes the answer the test set (three framings)."""

    def handle(self):
        while True:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = self.request.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            while len(rest) < length:
                rest += self.request.recv(65536)
            self.server.seen.append((head.decode("latin-1"), rest[:length]))
            status, content, framing = self.server.answer
            reason = {200: "OK"}.get(status, "Whatever")
            if framing == "length":
                self.request.sendall(
                    f"HTTP/1.1 {status} {reason}\r\ncontent-length: {len(content)}\r\n"
                    "content-type: application/json\r\n\r\n".encode()
                    + content
                )
            elif framing == "chunked":
                body = b"".join(
                    f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n"
                    for part in (content[:3], content[3:])
                    if part
                )
                self.request.sendall(
                    f"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 {status} {reason}\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n".encode()
                    + body
                    + b"0\r\nx-t: 1\r\n\r\n"
                )
            else:
                self.request.sendall(f"HTTP/1.0 {status} {reason}\r\n\r\n".encode() + content)
                return


@pytest.fixture
def plain_service():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Answer)
    server.daemon_threads = True
    server.seen = []
    server.answer = (200, b"{}", "length")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(params=["length", "chunked", "close", "https"])
def answering(request, monkeypatch):
    """A client whose service answers (status, content): a real plain-HTTP socket server in
    three framings, or httpx (https://) with its transport replaced."""
    monkeypatch.setenv("AGENT_TASK_TOKEN", "atk_env")
    if request.param == "https":

        def make(status, content):
            def fake_post(self, url, **kwargs):
                return httpx.Response(status, content=content)

            monkeypatch.setattr(httpx.Client, "post", fake_post)
            return ServiceClient("https://service", None)

        return make
    server = request.getfixturevalue("plain_service")

    def make(status, content):
        server.answer = (status, content, request.param)
        host, port = server.server_address
        return ServiceClient(f"http://{host}:{port}/", None)

    return make


def test_error_bodies_become_their_codes(answering):
    body = json.dumps({"error": "no such task", "code": "NOT_FOUND"}).encode()
    with pytest.raises(TaskError) as info:
        answering(404, body).verb("agenttask.get", b"{}")
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
def test_answers_that_are_not_the_documented_body_are_malformed(answering, status, content):
    with pytest.raises(TaskError) as info:
        answering(status, content).verb("x", b"{}")
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


def test_an_answer_comes_back_whole_and_the_connection_is_kept(answering):
    client = answering(200, json.dumps({"ok": "é" * 5000}).encode())
    for _ in range(3):
        assert client.verb("agenttask.list", b'{"a": 1}') == {"ok": "é" * 5000}


def test_the_plain_client_sends_the_documented_request(plain_service, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_TOKEN", "atk_env")
    host, port = plain_service.server_address
    client = ServiceClient(f"http://{host}:{port}/base", None)
    client.verb("agent task.x", b'{"a": 1}')
    client.upload("acme", "default", b"\x00raw")
    (head, body), (upload_head, upload_body) = plain_service.seen
    lines = head.split("\r\n")
    assert lines[0] == "POST /base/v/agent%20task.x HTTP/1.1"
    assert {
        "Host: " + f"{host}:{port}",
        "Authorization: Bearer atk_env",
        "Content-Type: application/json",
        "Accept: application/json",
        "Content-Length: 8",
    } <= set(lines[1:])
    assert body == b'{"a": 1}'
    assert upload_head.startswith(
        "POST /base/v1/hub/workspace/repositories/acme/profiles/default/agent-tasks/"
        "collector-upload HTTP/1.1"
    )
    assert "Content-Type: application/octet-stream" in upload_head
    assert upload_body == b"\x00raw"


def test_a_token_that_cannot_be_a_header_is_refused_before_sending(plain_service, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_TOKEN", "atk\r\nX-Injected: 1")
    host, port = plain_service.server_address
    with pytest.raises(TaskError) as info:
        ServiceClient(f"http://{host}:{port}", None).verb("x", b"{}")
    assert info.value.code is ErrorCode.SERVICE_UNREACHABLE
    assert plain_service.seen == []


def test_a_service_that_stops_answering_mid_way_is_unreachable(monkeypatch):
    monkeypatch.setenv("AGENT_TASK_TOKEN", "atk_env")
    listener = socketserver.TCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler)
    host, port = listener.server_address

    def half_answer():
        conn, _ = listener.socket.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{")
        conn.close()

    thread = threading.Thread(target=half_answer, daemon=True)
    thread.start()
    try:
        with pytest.raises(TaskError) as info:
            ServiceClient(f"http://{host}:{port}", None, timeout=5).verb("x", b"{}")
    finally:
        thread.join(5)
        listener.server_close()
    assert info.value.code is ErrorCode.SERVICE_UNREACHABLE
    assert "(RemoteProtocolError)" in info.value.message
