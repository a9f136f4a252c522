"""The scheduling fields and verbs over HTTP (``POST /v/<verb>``, a real server).

runAt/delayMs/maxAttempts/backoff on create, pause/resume/paused and the bulk acts reach the
same code as in process (tests/taskcore/queue/test_schedule.py, test_retry.py, test_bulk.py);
here the door: status codes, typed refusals, the answer's JSON.
"""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app


class _Served:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.workspace = f"w{uuid.uuid4().hex[:12]}"  # the module may share a database
        self.tokens = {}
        for role, tier, autonomy in (
            ("admin", Tier.ADMIN, 3),
            ("member", Tier.MEMBER, 1),
            ("agent", Tier.AGENT, 1),
        ):
            self.tokens[role] = issue_token(
                service.storage,
                service.clock,
                workspace=self.workspace,
                tier=tier,
                autonomy=autonomy,
                name=role,
            ).token
        self.server = BackgroundServer(create_app(service))
        self.client = httpx.Client(base_url=self.server.start(), timeout=30)

    def post(self, role: str, verb: str, body: object) -> httpx.Response:
        return self.client.post(
            f"/v/{verb}",
            content=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.tokens[role]}",
                "Content-Type": "application/json",
            },
        )

    def close(self) -> None:
        self.client.close()
        self.server.stop()


@pytest.fixture
def served(tmp_path):
    service = Service.open(tmp_path / "data")
    s = _Served(service)
    yield s
    s.close()
    service.close()


def test_create_with_delay_and_retries_over_http(served):
    made = served.post(
        "member",
        "agenttask.create",
        {"verb": "agent.run", "delayMs": 600, "maxAttempts": 2, "backoff": {"initialMs": 5}},
    )
    assert made.status_code == 200, made.text
    task = made.json()
    assert task["runAtMs"] - task["createdAtMs"] == 600
    assert (task["attempt"], task["maxAttempts"]) == (1, 2)
    assert task["backoff"]["initialMs"] == 5
    assert served.post("agent", "agenttask.claimNext", {}).json() == {"claimed": False}
    started = time.monotonic()
    woke = served.post("agent", "agenttask.claimNext", {"waitMs": 10_000}).json()
    assert woke["claimed"] is True
    assert time.monotonic() - started < 5.0


def test_both_run_at_and_delay_is_a_400_with_its_code(served):
    answer = served.post(
        "member", "agenttask.create", {"verb": "agent.run", "runAt": 1, "delayMs": 1}
    )
    assert answer.status_code == 400
    assert answer.json()["code"] == "BAD_INPUT"


def test_pause_resume_and_bulk_over_http(served):
    task = served.post("member", "agenttask.create", {"verb": "agent.run"}).json()["taskId"]
    assert served.post("agent", "agenttask.pause", {"verb": "agent.run"}).status_code == 403
    assert served.post("admin", "agenttask.pause", {"verb": "agent.run"}).json()["paused"]
    paused = served.post("admin", "agenttask.paused", {}).json()["verbs"]
    assert [p["verb"] for p in paused] == ["agent.run"]
    assert served.post("agent", "agenttask.claimNext", {}).json() == {"claimed": False}
    served.post("admin", "agenttask.resume", {"verb": "agent.run"})
    low = served.post("member", "agenttask.cancelMany", {"dryRun": True})
    assert (low.status_code, low.json()["code"]) == (403, "FORBIDDEN")
    dry = served.post("admin", "agenttask.cancelMany", {"dryRun": True}).json()
    assert dry["taskIds"] == [task]
    done = served.post("admin", "agenttask.cancelMany", {"status": "QUEUED"}).json()
    assert done["taskIds"] == [task]
    got = served.post("member", "agenttask.get", {"taskId": task}).json()
    assert got["status"] == "CANCELLED"
