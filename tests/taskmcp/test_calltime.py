"""No MCP tool call holds its request longer than the time limit (45 s; shorter here).

A tool whose handler blocks answers ``CALL_TIMED_OUT`` at the limit, with a ``warning`` log
message the client asked for (``logging/setLevel`` on the 2025-11-25 wire, the ``_meta``
opt-in on 2026-07-28); the handler then finishes on its own and is audited once, as every
call is. Over HTTP the same, through the official SDK client.
"""

from __future__ import annotations

import json
import threading
import time

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from taskcore import Actor, CallContext, RiskClass, Service, Tier, TxMode
from taskcore.limits import MCP_TOOL_CALL_MAX_MS
from taskcore.testing import op
from taskmcp import calltime
from taskmcp.server import build_server, fixed_principal
from taskmcp.tools import Family

from tests.taskhttp.fixtures import KeyIn, Live

AGENT = Actor(token_id="local", workspace="w1", tier=Tier.AGENT, autonomy=1)


class Hold:
    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = threading.Event()

    def handler(self, ctx: CallContext, req: KeyIn) -> dict:
        self.release.wait(30)
        self.finished.set()
        return {"key": req.key}


def _register(service: Service, hold: Hold) -> None:
    service.registry.register(
        op(
            "demo.hold",
            hold.handler,
            input_type=KeyIn,
            risk=RiskClass.WRITE,
            tx=TxMode.OWN,
            mcp=True,
            idempotent=False,
        )
    )


def test_the_limit_is_45_seconds():
    assert MCP_TOOL_CALL_MAX_MS == 45_000
    assert calltime.TOOL_CALL_MAX_SECONDS == 45


@pytest.fixture
def held(tmp_path):
    service = Service.open(tmp_path / "data")
    hold = Hold()
    _register(service, hold)
    yield service, hold
    hold.release.set()
    service.close()


@pytest.mark.parametrize(
    ("mode", "level", "warned"),
    [("legacy", "warning", True), ("legacy", "error", False), ("legacy", None, True)],
)
def test_a_call_past_the_limit_answers_call_timed_out(held, mode, level, warned):
    service, hold = held
    server = build_server(service, Family.QUEUE, fixed_principal(AGENT), call_seconds=0.5)
    logged: list = []

    async def on_log(params) -> None:
        logged.append(params)

    async def main():
        async with Client(server, mode=mode, logging_callback=on_log) as client:
            if level is not None:
                await client.set_logging_level(level)
            started = time.monotonic()
            result = await client.call_tool("demo_hold", {"key": "a"})
            elapsed = time.monotonic() - started
            quick = await client.call_tool("observe_whoami", {})
            return result, elapsed, quick

    result, elapsed, quick = anyio.run(main)
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert body["code"] == "CALL_TIMED_OUT"
    assert "may still complete" in body["error"]
    assert 0.4 < elapsed < 5
    assert not quick.is_error  # the session goes on serving
    assert [m.level for m in logged] == (["warning"] if warned else [])
    if warned:
        assert logged[0].data["code"] == "CALL_TIMED_OUT"
        assert logged[0].logger == "agent-task"
    # the call itself finishes when it can, and is audited once
    assert service.audit_count(operation="demo.hold") == 0
    hold.release.set()
    assert hold.finished.wait(10)
    for _ in range(100):
        if service.audit_count(operation="demo.hold") == 1:
            break
        time.sleep(0.05)
    assert service.audit_count(operation="demo.hold") == 1


def test_on_the_2026_wire_the_warning_needs_the_request_opt_in(held):
    service, _hold = held
    server = build_server(service, Family.QUEUE, fixed_principal(AGENT), call_seconds=0.3)

    async def run(log_level):
        logged: list = []

        async def on_log(params) -> None:
            logged.append(params)

        async with Client(server, mode="auto", logging_callback=on_log, log_level=log_level) as c:
            result = await c.call_tool("demo_hold", {"key": "b"})
        return result, logged

    for log_level, expected in ((None, []), ("warning", ["warning"]), ("error", [])):
        result, logged = anyio.run(run, log_level)
        assert json.loads(result.content[0].text)["code"] == "CALL_TIMED_OUT"
        assert [m.level for m in logged] == expected, log_level


def test_over_http_the_endpoint_answers_at_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(calltime, "TOOL_CALL_MAX_SECONDS", 1.0)
    live = Live(tmp_path / "data")
    hold = Hold()
    _register(live.service, hold)
    live.start()
    try:

        async def main():
            http = create_mcp_http_client(
                headers={"Authorization": f"Bearer {live.tokens['agent']}"}
            )
            transport = streamable_http_client(live.url + "/mcp", http_client=http)
            async with Client(transport, mode="legacy") as client:
                started = time.monotonic()
                result = await client.call_tool("demo_hold", {"key": "h"})
                return result, time.monotonic() - started

        result, elapsed = anyio.run(main)
    finally:
        hold.release.set()
        live.stop()
    assert json.loads(result.content[0].text)["code"] == "CALL_TIMED_OUT"
    assert 0.9 < elapsed < 10
