"""``GET /metrics``: Prometheus text that prometheus_client's own parser reads back."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from taskcore import Service, Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app


@pytest.fixture
def served(tmp_path):
    service = Service.open(tmp_path / "data")
    tokens = {
        tier: issue_token(
            service.storage, service.clock, workspace="w1", tier=tier, autonomy=3
        ).token
        for tier in (Tier.ADMIN, Tier.MEMBER, Tier.AGENT)
    }
    with BackgroundServer(create_app(service)) as url:
        yield url, tokens
    service.close()


def _families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def _call(url, token, verb, body=None):
    return httpx.post(
        f"{url}/v/{verb}", json=body or {}, headers={"Authorization": f"Bearer {token}"}
    )


def test_metrics_parse_and_count_calls_by_operation_door_and_code(served):
    url, tokens = served
    admin = tokens[Tier.ADMIN]
    task_id = _call(url, admin, "agenttask.create", {"verb": "agent.run"}).json()["taskId"]
    _call(url, admin, "agenttask.create", {"verb": "agent.run"})
    _call(url, tokens[Tier.AGENT], "agenttask.claim", {"taskId": task_id})
    _call(url, tokens[Tier.AGENT], "agenttask.list")  # FORBIDDEN
    _call(url, admin, "no.such.verb")  # UNKNOWN_OPERATION, label "unknown"
    response = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {admin}"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families = _families(response.text)
    calls = {
        (s.labels["operation"], s.labels["door"], s.labels["code"]): s.value
        for s in families["agent_task_calls"].samples
        if s.name == "agent_task_calls_total"
    }
    assert calls[("agenttask.create", "http", "OK")] == 2
    assert calls[("agenttask.list", "http", "FORBIDDEN")] == 1
    assert calls[("unknown", "http", "UNKNOWN_OPERATION")] == 1
    assert not any(op == "no.such.verb" for op, _, _ in calls)
    latency = families["agent_task_call_duration_seconds"]
    counts = [s for s in latency.samples if s.name.endswith("_count")]
    assert any(s.labels["operation"] == "agenttask.claim" and s.value == 1 for s in counts)
    queue = {
        s.labels["status"]: s.value
        for s in families["agent_task_queue_tasks"].samples
        if s.labels["workspace"] == "w1"
    }
    assert queue == {"QUEUED": 1, "LEASED": 1}
    expired = families["agent_task_queue_lease_expired"].samples
    assert [(s.labels["workspace"], s.value) for s in expired] == [("w1", 0)]


def test_metrics_need_an_admin_token(served):
    url, tokens = served
    assert httpx.get(f"{url}/metrics").status_code == 401
    member = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {tokens[Tier.MEMBER]}"})
    assert member.status_code == 403
    assert member.json()["code"] == "FORBIDDEN"
