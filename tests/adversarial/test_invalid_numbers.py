"""Non-finite numbers and lone surrogates are BAD_INPUT with a path on every door (item 5).

The attack: ``1e400``, ``-1e999`` and a lone ``\\ud800`` in any free-form JSON field over
HTTP, and NaN/Infinity/``1e400`` in ``checkpoint.write`` over MCP, answered 500; MCP arguments
skipped the strict parse (depth, NaN, duplicate keys) because they arrive as a dict.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time

import pytest

from tests.adversarial.served import AGENT_TASK, Served

BAD = ["1e400", "-1e999", "NaN", "Infinity", "-Infinity", '"\\ud800"', '"a\\udfffb"']
WORKFLOW = "/v1/hub/workspace/repositories/acme/profiles/default/agent-tasks"


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """This module's service lives for the module: on SQLite and on PostgreSQL."""
    return module_backend


@pytest.fixture(scope="module")
def served(tmp_path_factory, _both_backends):
    server = Served(tmp_path_factory.mktemp("numbers") / "data")
    yield server
    server.stop()
    assert "Traceback" not in server.log()


def _raw(served, path, text, token):
    return served.client.post(
        path, content=text.encode(), headers=served.headers(token, Accept="application/json")
    )


def _bad_input(r, path):
    assert r.status_code == 400, r.text
    body = r.json()
    assert (body["code"], body["path"]) == ("BAD_INPUT", path), body


@pytest.mark.parametrize("bad", BAD)
def test_a_free_form_queue_field_over_http(served, bad):
    text = f'{{"verb": "agent.run", "payload": {{"note": [1, {bad}]}}}}'
    _bad_input(_raw(served, "/v/agenttask.create", text, served.admin), "$.payload.note[1]")


@pytest.mark.parametrize("bad", BAD)
def test_checkpoint_state_over_http(served, bad):
    text = f'{{"taskId": "at_x", "phaseKey": "p", "state": {{"x": {bad}}}, "outputs": []}}'
    _bad_input(_raw(served, "/v/agenttask.checkpoint.write", text, served.admin), "$.state.x")


@pytest.mark.parametrize("bad", BAD)
def test_the_workflow_envelope_over_http(served, bad):
    text = f'{{"operation": "capabilities", "request": {{"x": {bad}}}}}'
    _bad_input(_raw(served, WORKFLOW, text, served.admin), "$.request.x")


def _rpc(arguments_text):
    return (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
        f'"agenttask.checkpoint.write", "arguments": {arguments_text}}}}}'
    )


def _parse_error(r, code: str, path: str | None = None) -> None:
    """An MCP endpoint answers JSON it does not read with JSON-RPC -32700, {error, code} as data."""
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == -32700, error
    assert error["data"]["code"] == code, error
    if path is not None:
        assert error["data"]["path"] == path, error


@pytest.mark.parametrize("bad", [*BAD, "1e999"])
def test_checkpoint_write_over_mcp(served, bad):
    text = _rpc(f'{{"taskId": "at_x", "phaseKey": "p", "state": {{"x": {bad}}}}}')
    _parse_error(
        _raw(served, "/mcp", text, served.admin), "BAD_INPUT", "$.params.arguments.state.x"
    )


def test_duplicate_keys_and_depth_over_mcp(served):
    dup = _rpc('{"taskId": "at_x", "taskId": "at_y", "phaseKey": "p", "state": {}}')
    _parse_error(_raw(served, "/mcp", dup, served.admin), "MALFORMED_JSON")
    deep = _rpc('{"taskId": "at_x", "phaseKey": "p", "state": %s}' % ("[" * 80 + "]" * 80))
    _parse_error(_raw(served, "/mcp", deep, served.admin), "OUT_OF_BOUNDS")


def test_a_valid_mcp_call_still_reaches_the_tool(served):
    args = '{"taskId": "at_0123456789abcdef0123456789abcdef", "phaseKey": "p", "state": {}, '
    text = _rpc(args + '"outputs": [], "fence": null}')
    r = _raw(served, "/mcp", text, served.admin)
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert result["isError"] is True  # no such task: a tool error, not a transport one
    assert json.loads(result["content"][0]["text"])["code"] == "NOT_FOUND"


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "1e400", "-1e999"])
def test_checkpoint_write_over_mcp_stdio_where_arguments_arrive_as_a_dict(tmp_path, bad):
    # The SDK's stdio transport parses each line leniently (NaN, 1e400) and hands the tool
    # arguments over as a dict: the front door's tree check refuses them with the path. (A
    # lone surrogate never gets that far on stdio: the SDK drops the line; in memory it does,
    # see tests/taskmcp/test_server.py.)
    lines = [
        '{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": '
        '"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}',
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        _rpc(f'{{"taskId": "at_x", "phaseKey": "p", "state": {{"x": {bad}}}, "outputs": []}}'),
    ]
    proc = subprocess.Popen(
        [AGENT_TASK, "mcp", "--stdio", "--data-dir", str(tmp_path / "data"), "--autonomy", "3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        answers: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: [answers.put(line) for line in proc.stdout], daemon=True
        ).start()
        call = None
        deadline = time.monotonic() + 60
        while call is None and time.monotonic() < deadline:
            # stdin stays open until the answer is in (EOF ends the session first)
            with contextlib.suppress(queue.Empty):
                answer = json.loads(answers.get(timeout=1.0))
                if answer.get("id") == 1:
                    call = answer
    finally:
        proc.stdin.close()
        proc.wait(60)
        err = proc.stderr.read() if proc.stderr else ""
    assert call is not None, err
    assert call["result"]["isError"] is True, call
    body = json.loads(call["result"]["content"][0]["text"])
    assert (body["code"], body["path"]) == ("BAD_INPUT", "$.state.x"), body
    assert "Traceback" not in err
