"""``GET /v1/events`` over a real socket: server-sent events as a client reads them.

The stream's rules are tested in tests/taskcore/events/test_stream.py; this checks the
transport: the refusals as JSON with their statuses, the SSE wire (id / event / data),
``Last-Event-ID`` as a header, the query's filters, the bounds, and a reader that stops
reading (the server stops reading the journal for it, then closes it).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskcore.events.stream import hub_of
from taskcore.store.audit_api import AuditEvent
from taskhttp import BackgroundServer, TransportLimits, create_app


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


@pytest.fixture
def live(tmp_path):
    service = Service.open(tmp_path / "data")
    tokens = {
        role: issue_token(
            service.storage, service.clock, workspace="w", tier=tier, autonomy=2, name=role
        ).token
        for role, tier in (("admin", Tier.ADMIN), ("member", Tier.MEMBER))
    }
    hub = hub_of(service)
    hub.poll_s = 0.2  # PostgreSQL's horizon may wait for transactions open elsewhere
    server = BackgroundServer(create_app(service, limits=TransportLimits(events_write_timeout=1.0)))
    url = server.start()
    yield url, tokens, service
    server.stop()
    service.close()


def _post(url: str, token: str, verb: str, body: dict) -> dict:
    r = httpx.post(
        f"{url}/v/{verb}",
        content=json.dumps(body),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert r.status_code == 200, r.text
    return r.json()


def _messages(lines: Iterator[str]) -> Iterator[dict]:
    """SSE messages (comments skipped) as ``{"id", "event", "data"}``."""
    message: dict = {}
    for line in lines:
        if line == "":
            if "data" in message:
                yield message
            message = {}
        elif line.startswith(":") or line.startswith("retry:"):
            continue
        else:
            field, _, value = line.partition(": ")
            message[field] = json.loads(value) if field == "data" else value


def _take(url: str, token: str, n: int, *, params=None, headers=None) -> list[dict]:
    with httpx.stream(
        "GET",
        f"{url}/v1/events",
        params=params,
        headers={"Authorization": f"Bearer {token}", **(headers or {})},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        out = []
        for message in _messages(response.iter_lines()):
            out.append(message)
            if len(out) == n:
                return out
    raise AssertionError(f"the stream ended after {len(out)} messages")


def test_refusals_are_json_with_their_status(live):
    url, tokens, service = live
    assert httpx.get(f"{url}/v1/events").status_code == 401
    bad = httpx.get(
        f"{url}/v1/events", headers={"Authorization": f"Bearer {tokens['admin']}",
                                     "Last-Event-ID": "x1"}
    )  # fmt: skip
    assert (bad.status_code, bad.json()["code"]) == (400, "BAD_INPUT")
    with service.storage.write() as tx:
        for _ in range(3):
            tx.audit.append(
                AuditEvent(at_ms=1, actor="a", workspace="w", operation="x", input_digest="d",
                           outcome="OK")
            )  # fmt: skip
        tx.audit.prune(10**15, limit=100)
        oldest = tx.audit.oldest_seq()
    gone = httpx.get(
        f"{url}/v1/events", params={"lastEventId": "0"},
        headers={"Authorization": f"Bearer {tokens['admin']}"},
    )  # fmt: skip
    assert gone.status_code == 410
    assert gone.json()["code"] == "EVENTS_EXPIRED"
    assert gone.json()["details"] == {"oldestId": oldest}


def test_events_arrive_as_sse_and_resume_exactly_with_last_event_id(live):
    url, tokens, _ = live
    first = _post(url, tokens["member"], "agenttask.create", {"verb": "agent.run"})["taskId"]
    # From the beginning of the log: the token issued no calls before this one, so the first
    # messages are the create and the opening of this stream.
    seen = _take(url, tokens["admin"], 2, params={"lastEventId": "0"})
    assert [m["event"] for m in seen] == ["agenttask.create", "observe.events"]
    assert seen[0]["data"]["taskId"] == first
    assert seen[0]["id"] == str(seen[0]["data"]["id"])
    for _ in range(3):
        _post(url, tokens["member"], "agenttask.create", {"verb": "agent.run"})
    resumed = _take(url, tokens["admin"], 4, headers={"Last-Event-ID": seen[1]["id"]})
    assert [m["event"] for m in resumed] == ["agenttask.create"] * 3 + ["observe.events"]
    ids = [int(m["id"]) for m in seen + resumed]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_the_querys_filters_apply(live):
    url, tokens, _ = live
    task_id = _post(url, tokens["member"], "agenttask.create", {"verb": "agent.run"})["taskId"]
    _post(url, tokens["member"], "agenttask.create", {"verb": "agent.run"})
    _post(url, tokens["admin"], "agenttask.cancel", {"taskId": task_id})
    got = _take(
        url,
        tokens["admin"],
        1,
        params={"lastEventId": "0", "operation": ["agenttask.c*"], "task": task_id},
        headers={},
    )
    assert [(m["event"], m["data"]["statusAfter"]) for m in got] == [("agenttask.create", "QUEUED")]


def test_a_token_may_hold_a_bounded_number_of_streams(live):
    url, tokens, service = live
    hub = hub_of(service)
    hub.slots.per_token = 1
    headers = {"Authorization": f"Bearer {tokens['admin']}"}
    with httpx.stream("GET", f"{url}/v1/events", headers=headers, timeout=30) as first:
        assert first.status_code == 200
        second = httpx.get(f"{url}/v1/events", headers=headers)
        assert (second.status_code, second.json()["code"]) == (429, "RATE_LIMITED")
        assert "Retry-After" in second.headers
    deadline = time.monotonic() + 10
    while hub.slots.count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hub.slots.count == 0  # the client left: its slot came back


def test_a_reader_that_stops_reading_holds_one_batch_and_is_closed(live):
    url, tokens, service = live
    # About 11 MB of SSE: more than every socket buffer on the way holds (loopback's
    # autotuned send buffer took about 10,000 of these events, 4.4 MB, on the development VM).
    total = 25_000
    with service.storage.write() as tx:
        for _ in range(total):
            tx.audit.append(
                AuditEvent(at_ms=1, actor="a", workspace="w", operation="demo.op",
                           input_digest="d" * 64, outcome="OK", subject="at_" + "0" * 32)
            )  # fmt: skip
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.sendall(
        f"GET /v1/events?lastEventId=0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {tokens['admin']}\r\n\r\n".encode()
    )
    hub = hub_of(service)
    try:
        furthest = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            positions = [s.position for s in list(hub.streams)]
            furthest = max([furthest, *positions])
            if not positions and hub.slots.count == 0 and furthest:
                break  # the server closed the stream
            time.sleep(0.05)
        assert hub.slots.count == 0, "the stalled stream was not closed"
        # The server stopped reading the journal where the reader stopped taking data.
        assert 0 < furthest < total
    finally:
        sock.close()
