"""One trace per task through the real doors: W3C ``traceparent`` from an HTTP header and
from an MCP request's ``_meta`` (the official SDK client), spans in OpenTelemetry's
in-memory exporter, the context stored on each audit event and on the task."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskcore.tracing import otel_tracer
from taskhttp import BackgroundServer, create_app

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
FROM_HTTP = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
FROM_MCP = f"00-{TRACE_ID}-1111111111111111-01"


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


@pytest.fixture
def traced(tmp_path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    service = Service.open(tmp_path / "data", tracer=otel_tracer(provider))
    tokens = {
        role: issue_token(
            service.storage, service.clock, workspace="w", tier=tier, autonomy=2, name=role
        ).token
        for role, tier in (("member", Tier.MEMBER), ("agent", Tier.AGENT))
    }
    server = BackgroundServer(create_app(service))
    url = server.start()
    yield url, tokens, exporter, service
    server.stop()
    service.close()


def _post(url: str, verb: str, body: dict, token: str, **headers: str) -> dict:
    response = httpx.post(
        f"{url}/v/{verb}",
        content=json.dumps(body),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}", **headers},
    )
    assert response.status_code == 200, response.text
    return response.json()


def _mcp(url: str, token: str, tool: str, arguments: dict, meta: dict | None) -> dict:
    async def main() -> dict:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(url + "/mcp", http_client=http)) as client:
            result = await client.call_tool(tool, arguments, meta=meta)
            assert not result.is_error, result.content
            return json.loads(result.content[0].text)

    return anyio.run(main)


def test_one_trace_per_task_through_http_headers_and_mcp_meta(traced):
    url, tokens, exporter, service = traced
    task_id = _post(
        url, "agenttask.create", {"verb": "agent.run"}, tokens["member"], traceparent=FROM_HTTP
    )["taskId"]
    # The worker's MCP client propagates the same trace (its own span as parent) ...
    claim = _mcp(
        url, tokens["agent"], "agenttask_claim", {"taskId": task_id}, {"traceparent": FROM_MCP}
    )
    fence = claim["lease"]["fence"]
    # ... and then sends no context at all: its calls join the task's trace all the same.
    _post(url, "agenttask.checkpoint", {"taskId": task_id, "fence": fence}, tokens["agent"])
    _mcp(
        url,
        tokens["agent"],
        "agenttask_checkpoint",
        {"taskId": task_id, "fence": fence, "status": "DONE"},
        None,
    )
    spans = [s for s in exporter.get_finished_spans() if s.attributes.get("agent_task.task_id")]
    assert [s.name for s in spans] == [
        "agenttask.create",
        "agenttask.claim",
        "agenttask.checkpoint",
        "agenttask.checkpoint",
    ]
    assert {f"{s.context.trace_id:032x}" for s in spans} == {TRACE_ID}
    assert [s.attributes["agent_task.door"] for s in spans] == ["http", "mcp", "http", "mcp"]
    assert {s.kind for s in spans} == {SpanKind.SERVER}
    create, claim_span, renew, done = spans
    assert create.parent.span_id == int(FROM_HTTP[36:52], 16)
    assert claim_span.parent.span_id == int(FROM_MCP[36:52], 16)
    assert renew.parent.span_id == done.parent.span_id == create.context.span_id
    with service.storage.read() as tx:
        events = [e for e in tx.audit.after(0, up_to=10**9, limit=100) if e.subject == task_id]
        assert tx.audit.task_trace("w", task_id) == (
            f"00-{TRACE_ID}-{create.context.span_id:016x}-{int(create.context.trace_flags):02x}"
        )
    assert [e.traceparent[3:35] for e in events] == [TRACE_ID] * 4
    assert [int(e.traceparent[36:52], 16) for e in events] == [s.context.span_id for s in spans]
