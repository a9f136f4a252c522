"""The board updates live from the event stream (Chromium through Playwright).

Each live page listens to ``/board/events`` (the session's ``GET /v1/events``) and re-fetches
its region when an event it shows arrives: no reload, and no polling while the stream is up.
"""

from __future__ import annotations

from taskcore import Door
from taskcore.events.webhook_delivery import WebhookDelivery
from taskcore.events.webhooks import new_secret
from taskcore.operator_ops import OPERATOR_ACTOR
from taskcore.outbox import BackoffPolicy

from tests.taskboard.conftest import sign_in


def _streaming(page) -> None:
    page.wait_for_selector("#live[data-live-mode='stream']", timeout=15_000)
    page.evaluate("window.__same_document = true")


def test_the_queue_updates_from_the_stream(page, live):
    sign_in(page, live, live.admin)
    _streaming(page)
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    # Well within the 3 s the polling fallback would take: the stream brought it.
    page.wait_for_selector(f"#backlog a:has-text('{task_id[:15]}')", timeout=2_500)
    assert page.evaluate("window.__same_document") is True
    assert page.get_attribute("#live", "data-live-mode") == "stream"


def test_an_escalation_appears_on_the_approvals_page(page, live):
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/approvals")
    _streaming(page)
    live.call(live.admin, "agenttask.escalate", {"taskId": task_id, "targetVerb": "deploy.prod"})
    page.wait_for_selector(f"article.approval:has-text('{task_id}')", timeout=5_000)
    assert page.evaluate("window.__same_document") is True


def test_the_audit_feed_shows_new_events_and_not_its_own_reads(page, live):
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/audit")
    _streaming(page)
    first = page.get_attribute("#live", "data-refreshed")
    page.wait_for_timeout(1500)
    # Its own refreshes (observe.audit calls) do not wake it: nothing happened meanwhile.
    assert page.get_attribute("#live", "data-refreshed") == first
    task_id = live.call(live.member, "agenttask.create", {"verb": "agent.run"})["taskId"]
    page.wait_for_selector(f"#audit a:has-text('{task_id[:15]}')", timeout=5_000)
    assert page.evaluate("window.__same_document") is True


def test_a_tasks_page_follows_its_task(page, live):
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/tasks/{task_id}")
    _streaming(page)
    assert "QUEUED" in page.inner_text("#live")
    live.call(live.agent, "agenttask.claim", {"taskId": task_id})
    page.wait_for_selector("#live:has-text('LEASED')", timeout=5_000)
    assert page.evaluate("window.__same_document") is True


def test_webhooks_are_listed_and_a_delivery_redelivered(page, live):
    service = live.service
    secret = new_secret()
    added = service.dispatch(
        OPERATOR_ACTOR,
        "operator.webhook_add",
        {
            "workspace": "ws1",
            "url": "http://127.0.0.1:9/nobody-listens",
            "events": ["agenttask.*"],
            "secret": secret,
            "allow_private_targets": True,
        },
        door=Door.CLI,
    ).json()
    endpoint = added["endpoint"]["endpointId"]
    queued = service.dispatch(
        OPERATOR_ACTOR,
        "operator.webhook_test",
        {"endpoint_id": endpoint},
        door=Door.CLI,
    ).json()["delivery"]
    policy = BackoffPolicy(base_ms=10, cap_ms=10, attempts_max=None, deadline_ms=1)
    WebhookDelivery(service.storage, policy=policy).deliver_one(queued["seq"])  # dead at once
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/webhooks")
    row = page.locator(f"tr[data-delivery='{queued['seq']}']")
    assert "dead" in row.inner_text()
    assert "unreachable" in row.inner_text()
    assert endpoint[:14] in page.inner_text("#endpoints")
    assert secret not in page.content()
    row.locator("button.redeliver").click()
    page.wait_for_selector(".flash")
    assert f"Delivery {queued['seq']} is queued again" in page.inner_text(".flash")
    assert "queued" in page.locator(f"tr[data-delivery='{queued['seq']}']").inner_text()
