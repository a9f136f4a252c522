"""A waiting ``POST /v/agenttask.claimNext`` on a real server (uvicorn, real sockets).

The call is woken by a create over another connection; many waiting calls hold no worker
thread (the waits are awaits on the event loop); a client that disconnects ends its wait at
once, takes nothing and is still audited once; the bounds answer typed refusals.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app

CLAIM = "/v/agenttask.claimNext"


class _Queue:
    """A served journal and tokens of a workspace of its own (the module may share a database)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.workspace = f"w{uuid.uuid4().hex[:12]}"
        self.tokens = {}
        for role, tier in (("member", Tier.MEMBER), ("agent", Tier.AGENT), ("agent2", Tier.AGENT)):
            issued = issue_token(
                service.storage,
                service.clock,
                workspace=self.workspace,
                tier=tier,
                autonomy=1,
                name=role,
            )
            self.tokens[role] = issued.token
        self.server = BackgroundServer(create_app(service))
        self.url = self.server.start()
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def post(self, role: str, path: str, body: object) -> httpx.Response:
        return self.client.post(
            path,
            content=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.tokens[role]}",
                "Content-Type": "application/json",
            },
        )

    def claims(self) -> int:
        return self.service.audit_count(workspace=self.workspace, operation="agenttask.claimNext")

    def stop(self) -> None:
        self.client.close()
        self.server.stop()


@pytest.fixture
def queue(tmp_path):
    service = Service.open(tmp_path / "data", claim_waiters_per_token=64)
    q = _Queue(service)
    yield q
    q.stop()
    service.close()


def test_a_waiting_claim_over_http_is_woken_by_a_create(queue):
    def create_soon() -> None:
        time.sleep(0.5)
        with httpx.Client(base_url=queue.url, timeout=30) as other:
            other.post(
                "/v/agenttask.create",
                content=b'{"verb": "agent.run"}',
                headers={
                    "Authorization": f"Bearer {queue.tokens['member']}",
                    "Content-Type": "application/json",
                },
            ).raise_for_status()

    creator = threading.Thread(target=create_soon)
    creator.start()
    started = time.monotonic()
    answer = queue.post("agent", CLAIM, {"waitMs": 20_000})
    took = time.monotonic() - started
    creator.join()
    assert answer.status_code == 200
    assert answer.json()["claimed"] is True
    assert 0.4 < took < 10.0
    assert queue.claims() == 1


def test_waiting_calls_hold_no_worker_thread(queue):
    # More waiting calls than the server has worker threads (40): if a wait held a thread,
    # the create below would queue behind them until they timed out.
    with ThreadPoolExecutor(50) as pool:
        waiting = [pool.submit(queue.post, "agent", CLAIM, {"waitMs": 5_000}) for _ in range(50)]
        deadline = time.monotonic() + 4
        while queue.service.waiters.held() < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert queue.service.waiters.held() == 50
        started = time.monotonic()
        created = queue.post("member", "/v/agenttask.create", {"verb": "agent.run"})
        assert created.status_code == 200
        assert time.monotonic() - started < 1.5
        answers = [f.result().json() for f in waiting]
    assert sum(a["claimed"] for a in answers) == 1
    assert queue.service.waiters.held() == 0
    assert queue.claims() == 50


def _raw_request(url: str, token: str, body: bytes) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    head = (
        f"POST {CLAIM} HTTP/1.1\r\nHost: {parts.hostname}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    return sock


def test_a_client_that_disconnects_stops_waiting_takes_nothing_and_is_audited(queue):
    sock = _raw_request(queue.url, queue.tokens["agent"], b'{"waitMs": 30000}')
    deadline = time.monotonic() + 5
    while queue.service.waiters.held() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert queue.service.waiters.held() == 1
    sock.close()
    deadline = time.monotonic() + 5
    while queue.service.waiters.held() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert queue.service.waiters.held() == 0, "the wait did not end with the connection"
    assert queue.claims() == 1
    # Nothing was handed to the client that left: a create is there for the next claimer.
    queue.post("member", "/v/agenttask.create", {"verb": "agent.run"}).raise_for_status()
    assert queue.post("agent2", CLAIM, {}).json()["claimed"] is True


def test_the_waiting_bounds_answer_typed_refusals(tmp_path):
    service = Service.open(tmp_path / "b", claim_waiters_per_token=1, claim_waiters_max=8)
    q = _Queue(service)
    try:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(q.post, "agent", CLAIM, {"waitMs": 2_000})
            time.sleep(0.5)
            refused = q.post("agent", CLAIM, {"waitMs": 2_000})
            assert refused.status_code == 429
            assert refused.json()["code"] == "RATE_LIMITED"
            assert refused.headers.get("retry-after")
            assert first.result().json() == {"claimed": False}
    finally:
        q.stop()
        service.close()
