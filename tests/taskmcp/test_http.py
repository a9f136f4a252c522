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


def test_unparseable_json_is_400_malformed_json_before_mcp_reads_it(live):
    # The strict parse refuses it with the typed {error, code} body, as every route does.
    r = _raw(live, "/mcp", b"{")
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["code"] == "MALFORMED_JSON"


@pytest.mark.parametrize(
    "body", [b"[]", b'{"jsonrpc": "1.0"}', b'{"jsonrpc": "2.0", "id": 1, "method": 5}']
)
def test_json_that_is_no_json_rpc_message_is_400_with_a_json_rpc_error(live, body):
    # Valid JSON, but not a JSON-RPC message: the SDK answers 400 with a JSON-RPC error
    # (id null, its invalid-params code), never a 500 or an HTML page.
    r = _raw(live, "/mcp", body)
    assert r.status_code == 400
    answer = r.json()
    assert (answer["jsonrpc"], answer["id"]) == ("2.0", None)
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith("Validation error")
