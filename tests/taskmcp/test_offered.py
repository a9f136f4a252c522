"""A tool is listed only where the service would answer it: ``session_gate`` on a default serve.

``session_gate`` answers a network caller only for the workspaces the operator named
(``agent-task serve --session-gate-workspace W``); the listing asks the same rule
(:meth:`taskcore.Operation.offers`), so a client is never offered a tool that is refused
whatever it sends. Locally (``agent-task mcp --stdio``) it is listed and answers.
"""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from taskcore import Actor, Service, Tier
from taskmcp.server import build_server, fixed_principal
from taskmcp.tools import Family

from tests.taskmcp.support import QueueService, run

W1 = Actor(token_id="t1", workspace="w1", tier=Tier.AGENT, autonomy=1)
W2 = Actor(token_id="t2", workspace="w2", tier=Tier.AGENT, autonomy=1)


def _listed_and_called(service: Service, actor: Actor) -> tuple[list[str], dict]:
    server = build_server(service, Family.QUEUE, fixed_principal(actor))

    async def main() -> tuple[list[str], dict]:
        async with Client(server) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("session_gate", {"session_id": "nope"})
            return names, json.loads(result.content[0].text)

    return anyio.run(main)


@pytest.mark.parametrize(
    ("allowed", "actor", "listed"),
    [
        (frozenset(), W1, False),  # the default of agent-task serve
        (frozenset({"w1"}), W1, True),
        (frozenset({"w1"}), W2, False),
        (None, W2, True),  # agent-task mcp --stdio: the caller is the local user
    ],
)
def test_session_gate_is_listed_exactly_where_it_answers(tmp_path, allowed, actor, listed):
    service = Service.open(tmp_path / "data", session_gate_workspaces=allowed)
    try:
        names, answer = _listed_and_called(service, actor)
    finally:
        service.close()
    assert ("session_gate" in names) is listed
    assert "agenttask_claimNext" in names
    if listed:
        assert answer.get("code") != "FORBIDDEN"
    else:
        assert answer["code"] == "FORBIDDEN"


def test_a_default_serve_does_not_list_session_gate_over_http(tmp_path):
    queue = QueueService(tmp_path / "data").start()
    try:

        async def names(client: Client) -> list[str]:
            return [t.name for t in (await client.list_tools()).tools]

        for role in ("agent1", "admin"):
            listed = run(queue.http(role), names)
            assert "session_gate" not in listed
            assert "agenttask_claimNext" in listed
    finally:
        queue.stop()


def test_stdio_lists_session_gate(tmp_path):
    queue = QueueService(tmp_path / "data")
    try:

        async def names(client: Client) -> list[str]:
            return [t.name for t in (await client.list_tools()).tools]

        assert "session_gate" in run(queue.stdio("agent1", tmp_path), names)
    finally:
        queue.stop()
