import http.client
import json

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from taskcore import ErrorCode

from tests.taskhttp.fixtures import Live

WORKSPACE = "/v1/hub/workspace/mcp?repository=acme%2Fwidgets&profile=default"


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """This module's service lives for the module: its backend does too (the service's
    fixture depends on this one, so it is made again for each backend)."""
    return module_backend


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = Live(tmp_path_factory.mktemp("mcp")).start()
    yield server
    server.stop()


def _session(live, path, token, script, mode="legacy"):
    async def main():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with Client(
            streamable_http_client(live.url + path, http_client=http), mode=mode
        ) as c:
            return await script(c)

    return anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_initializes_lists_and_calls_over_http(live, mode):
    async def script(client):
        listed = await client.list_tools()
        ok = await client.call_tool("demo_note", {"key": "m", "text": "over mcp"})
        read = await client.call_tool("demo_read", {"key": "m"})
        bad = await client.call_tool("demo_read", {"key": 1})
        return client.server_info, listed, ok, read, bad

    info, listed, ok, read, bad = _session(live, "/mcp", live.tokens["agent"], script, mode)
    if mode == "legacy":
        assert info.name == "agent-task"
    # autonomy 1 does not reach demo.destroy (destructive), so it is not offered to this token
    assert [t.name for t in listed.tools] == ["demo_gate", "demo_note", "demo_read"]
    assert ok.structured_content == {"key": "m", "text": "over mcp", "workspace": "w1"}
    assert read.structured_content["text"] == "over mcp"
    assert bad.is_error
    assert bad.structured_content is None
    assert json.loads(bad.content[0].text) == {
        "error": "expected a string, got integer; send a string at $.key",
        "code": "WRONG_TYPE",
        "path": "$.key",
    }


def test_the_workspace_endpoint_serves_workflow_tools_for_the_query_route(live):
    async def script(client):
        listed = await client.list_tools()
        return listed, await client.call_tool("echo", {"text": "hi"})

    listed, result = _session(live, WORKSPACE, live.tokens["agent"], script)
    assert [t.name for t in listed.tools] == ["echo", "raise"]
    assert result.structured_content == {
        "capability": "agentscm.agent-workflow-tasks/v1",
        "schema_version": 1,
        "operation": "echo",
        "result": {
            "repository": "acme/widgets",
            "profile": "default",
            "workspace": "w1",
            "text": "hi",
        },
    }


def test_tier_autonomy_and_workspace_come_from_the_token(live):
    async def script(client):
        return (
            await client.call_tool("demo_destroy", {"key": "m"}),
            await client.call_tool("demo_read", {"key": "m"}),
        )

    destroy, _read = _session(live, "/mcp", live.tokens["member"], script)
    assert json.loads(destroy.content[0].text)["code"] == "AUTONOMY_EXCEEDED"
    _session(
        live,
        "/mcp",
        live.tokens["agent"],
        lambda c: c.call_tool("demo_note", {"key": "ws", "text": "w1"}),
    )
    other = _session(
        live, "/mcp", live.tokens["other"], lambda c: c.call_tool("demo_read", {"key": "ws"})
    )
    assert json.loads(other.content[0].text)["code"] == "NOT_FOUND"


def _raw(live, path, body, token="agent", **headers):
    hdrs = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    if token is not None:
        hdrs["Authorization"] = f"Bearer {live.tokens[token]}"
    hdrs.update(headers)
    return httpx.post(live.url + path, content=body, headers=hdrs, timeout=10)


CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "demo.read", "arguments": {"key": "m"}},
    }
)


@pytest.mark.parametrize(
    ("token", "code"), [(None, ErrorCode.UNAUTHENTICATED), ("revoked", ErrorCode.TOKEN_REVOKED)]
)
def test_requests_without_a_live_token_are_refused_before_the_sdk(live, token, code):
    r = _raw(live, "/mcp", CALL, token=token)
    assert r.status_code == 401
    assert r.json()["code"] == code.value


def test_a_token_revoked_mid_session_is_refused_on_its_next_request(live):
    token, token_id = live.issue("agent")
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    first = httpx.post(live.url + "/mcp", content=CALL, headers=headers)
    assert first.status_code == 200
    live.revoke(token_id)
    second = httpx.post(live.url + "/mcp", content=CALL, headers=headers)
    assert second.status_code == 401
    assert second.json()["code"] == "TOKEN_REVOKED"


def test_a_tool_call_is_audited_once_under_the_operation_name(live):
    # CALL names the tool by the operation's dotted spelling, which tools/call still accepts
    before = live.service.audit_count(operation="demo.read")
    r = _raw(live, "/mcp", CALL)
    assert r.status_code == 200
    portable = CALL.replace('"demo.read"', '"demo_read"')
    assert _raw(live, "/mcp", portable).status_code == 200
    assert live.service.audit_count(operation="demo.read") == before + 2
    assert live.service.audit_count(operation="demo_read") == 0


@pytest.mark.parametrize(
    "query",
    ["", "?repository=a", "?repository=a&profile=b&profile=c", "?repository=%2E%2E&profile=p"],
)
def test_the_workspace_endpoint_needs_one_valid_route(live, query):
    r = _raw(live, "/v1/hub/workspace/mcp" + query, CALL)
    assert r.status_code in (400, 422)
    assert r.json()["code"] in ("BAD_INPUT", "INVALID_VALUE")


def test_get_and_delete_are_405(live):
    for method in ("GET", "DELETE"):
        r = httpx.request(
            method,
            live.url + "/mcp",
            headers={
                "Authorization": f"Bearer {live.tokens['agent']}",
                "Accept": "text/event-stream",
            },
        )
        assert r.status_code == 405
        assert r.headers["allow"] == "POST"
        assert r.json()["code"] == "METHOD_NOT_ALLOWED"


def test_an_oversized_mcp_body_is_413(live):
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "'
        + b"a" * (2 * 1024 * 1024)
        + b'"}}'
    )
    r = _raw(live, "/mcp", body)
    assert r.status_code == 413
    assert r.json()["code"] == "PAYLOAD_TOO_LARGE"


@pytest.mark.parametrize("path", ["/mcp", WORKSPACE])
@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(
    "body", [b"{", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"\xff", b"", b"[1,]"]
)
def test_unparseable_json_is_a_json_rpc_parse_error(live, path, version, body):
    before = live.service.audit_count(operation=f"mcp.{'queue' if path == '/mcp' else 'workspace'}")
    r = _raw(live, path, body, **{"MCP-Protocol-Version": version})
    assert r.status_code == 400
    answer = r.json()
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] is None
    assert answer["error"]["code"] == -32700
    assert answer["error"]["data"]["code"] == "MALFORMED_JSON"
    after = live.service.audit_count(operation=f"mcp.{'queue' if path == '/mcp' else 'workspace'}")
    assert after == before + 1


@pytest.mark.parametrize("path", ["/mcp", WORKSPACE])
@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(
    ("body", "request_id", "says"),
    [
        (b"[]", None, "no batches"),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', None, "no batches"),
        (b'"ping"', None, "a JSON object"),
        (b'{"jsonrpc": "1.0", "id": 2, "method": "ping"}', 2, '"jsonrpc" must be "2.0"'),
        (b'{"id": 3, "method": "ping"}', 3, '"jsonrpc" must be "2.0"'),
        (b'{"jsonrpc": "2.0", "id": 4, "method": 5}', 4, '"method" is a non-empty string'),
        (b'{"jsonrpc": "2.0", "id": "x", "method": ""}', "x", '"method" is a non-empty string'),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', None, '"id" is a string or'),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, '"id" is a string or'),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', None, '"id" is a string or'),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', None, '"id" is a string or'),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": [1]}', 6, '"params" is an'),
        (b'{"jsonrpc": "2.0", "id": 7}', 7, "exactly one of"),
        (b'{"jsonrpc": "2.0"}', None, 'a request needs "method"'),
        (b'{"jsonrpc": "2.0", "id": 8, "result": 1}', 8, '"result" is an object'),
        (b'{"jsonrpc": "2.0", "id": 9, "error": {"code": "x"}}', 9, '"error" is an object'),
    ],
)
def test_a_malformed_request_is_a_json_rpc_invalid_request(
    live, path, version, body, request_id, says
):
    r = _raw(live, path, body, **{"MCP-Protocol-Version": version})
    assert r.status_code == 400
    answer = r.json()
    assert answer["id"] == request_id
    assert answer["error"]["code"] == -32600
    assert says in answer["error"]["message"]
    assert answer["error"]["data"] == {"error": answer["error"]["message"], "code": "BAD_INPUT"}


def test_strictness_beyond_json_is_a_parse_error_too(live):
    # Duplicate keys and non-finite numbers are not JSON the server reads (RFC 8259 leaves
    # duplicates undefined; the SDK would keep the last one).
    for body in (
        b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": NaN}}',
    ):
        r = _raw(live, "/mcp", body)
        assert r.status_code == 400
        assert r.json()["error"]["code"] == -32700


def test_a_valid_message_still_reaches_the_sdk_after_the_checks(live):
    r = _raw(live, "/mcp", b'{"jsonrpc": "2.0", "id": "p", "method": "ping"}')
    assert r.status_code == 200
    assert r.json() == {"jsonrpc": "2.0", "id": "p", "result": {}}
    # a notification is accepted without an answer
    r = _raw(live, "/mcp", b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    assert r.status_code == 202


def test_header_values_are_read_without_their_surrounding_whitespace(live):
    # RFC 9110 5.5; the 2026-07-28 transport compares Mcp-Method and Mcp-Name to the body.
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "demo_read", "arguments": {"key": "m"}, "_meta": meta},
        }
    )
    # httpx refuses to send such a value; http.client sends it as written.
    host, port = live.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(
        "POST",
        "/mcp",
        body=body,
        headers={
            "Authorization": f"Bearer {live.tokens['agent']}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "demo_read \t ",
        },
    )
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    assert response.status == 200, answer
    assert "result" in answer
