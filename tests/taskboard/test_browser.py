"""The board in a real browser (Playwright driving Debian's Chromium) against a live service."""

from __future__ import annotations

import re

from tests.taskboard.conftest import sign_in

XSS_SCRIPT = "<script>window.__pwned = 1</script>"
XSS_IMG = '"><img src=x onerror="window.__pwned = 2">'


def test_sign_in_lands_on_the_queue_of_the_tokens_workspace(page, live):
    sign_in(page, live, live.admin)
    assert page.title().startswith("Queue")
    assert "ws1" in page.inner_text("header .who")


def test_a_wrong_token_is_refused_on_the_sign_in_page(page, live):
    page.goto(f"{live.url}/board/login")
    page.fill("#token", "atk_0000000000000000_" + "0" * 64)
    page.click("button[type=submit]")
    assert "not known" in page.inner_text("[role=alert]")
    assert page.url.endswith("/board/login")


def test_session_cookie_is_httponly_samesite_strict_and_sign_out_ends_it(page, live):
    sign_in(page, live, live.admin)
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "atb_session"]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/board"
    assert live.admin not in cookie["value"]
    page.click("text=Sign out")
    page.wait_for_url("**/board/login")
    page.goto(f"{live.url}/board/queue")
    assert page.url.endswith("/board/login")


def test_a_queued_task_appears_live_without_a_reload(page, live):
    sign_in(page, live, live.admin)
    page.evaluate("window.__same_document = true")
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    page.wait_for_selector(f"#backlog a:has-text('{task_id[:15]}')", timeout=15_000)
    assert page.evaluate("window.__same_document") is True  # no navigation happened


def test_escalate_from_an_agent_approve_in_the_browser_and_the_next_claim_is_admitted(page, live):
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    claim = live.call(live.agent, "agenttask.claim", {"taskId": task_id})
    escalated = live.call(
        live.agent,
        "agenttask.escalate",
        {
            "taskId": task_id,
            "targetVerb": "deploy.prod",
            "reason": "needs prod " + XSS_SCRIPT,
            "fence": claim["lease"]["fence"],
        },
    )
    gate_id = escalated["gate"]["gateId"]
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/approvals")
    card = page.locator(f"article[data-gate='{gate_id}']")
    assert "run deploy.prod" in card.locator(".grant").inner_text()
    assert XSS_SCRIPT in card.locator(".reason").inner_text()  # shown as text, inert
    card.locator("button.approve").click()
    page.wait_for_selector(".flash")
    assert "Approved" in page.inner_text(".flash")
    admitted = live.call(live.agent, "agenttask.claim", {"taskId": task_id})
    assert admitted["lease"]["grant"]["gateId"] == gate_id
    assert admitted["lease"]["grant"]["targetVerb"] == "deploy.prod"
    assert page.evaluate("window.__pwned") is None


def test_deny_needs_a_reason_and_fails_the_task_with_it(page, live):
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    live.call(live.admin, "agenttask.escalate", {"taskId": task_id, "targetVerb": "rm.rf"})
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/approvals")
    card = page.locator("article.approval", has_text=task_id)
    card.locator("button.danger").click()  # empty reason: the browser refuses to submit
    assert page.url.endswith("/board/approvals")
    card.locator("input[name=reason]").fill("too risky")
    card.locator("button.danger").click()
    page.wait_for_selector(".flash")
    detail = live.call(live.admin, "agenttask.get", {"taskId": task_id})
    assert detail["status"] == "FAILED"
    assert "too risky" in detail["lastError"]


def test_agent_supplied_markup_renders_inert(page, live):
    payload = {"title": XSS_SCRIPT, "note": XSS_IMG}
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run", "payload": payload})[
        "taskId"
    ]
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/tasks/{task_id}")
    text = page.inner_text("#payload")
    assert XSS_SCRIPT in text
    assert "onerror" in text
    assert page.locator("img").count() == 0
    assert page.evaluate("window.__pwned") is None
    page.wait_for_timeout(3500)  # a live refresh swaps the region in; still inert
    assert page.evaluate("window.__pwned") is None


def test_a_ws1_session_cannot_open_a_ws2_task_by_url(page, live):
    foreign = live.call(live.admin2, "agenttask.create", {"verb": "agent.run"})["taskId"]
    sign_in(page, live, live.admin)
    seen = page.goto(f"{live.url}/board/tasks/{foreign}")
    foreign_text = page.inner_text("main")
    missing = page.goto(f"{live.url}/board/tasks/at_00000000000000000000000000000000")
    missing_text = page.inner_text("main")
    assert seen.status == missing.status == 404
    assert foreign_text.replace(foreign, "X") == missing_text.replace(
        "at_00000000000000000000000000000000", "X"
    )


def test_a_post_without_the_csrf_token_is_refused(page, live):
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    sign_in(page, live, live.admin)
    refused = page.request.post(f"{live.url}/board/tasks/{task_id}/reorder", form={"priority": "9"})
    assert refused.status == 403
    assert "CSRF" in refused.text()
    assert live.call(live.admin, "agenttask.get", {"taskId": task_id})["priority"] == 0
    page.goto(f"{live.url}/board/queue")
    row = page.locator("#backlog tr", has_text=task_id[:15])
    row.locator("input[name=priority]").fill("9")
    row.locator("button").click()
    page.wait_for_selector(".flash")
    assert live.call(live.admin, "agenttask.get", {"taskId": task_id})["priority"] == 9


def test_a_token_is_shown_once_on_creation_and_can_be_revoked(page, live):
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/tokens")
    page.fill("input[name=name]", "ci-runner")
    page.select_option("select[name=tier]", "agent")
    page.click("button:has-text('Create')")
    secret = page.inner_text("#new-secret").strip()
    assert re.fullmatch(r"atk_[0-9a-f]{16}_[0-9a-f]{64}", secret)
    assert live.call(secret, "observe.whoami")["workspace"] == "ws1"
    page.reload()
    assert page.locator("#new-secret").count() == 0
    assert secret not in page.content()
    token_id = secret.split("_")[1]
    page.locator("#tokens tr", has_text=token_id).locator("button.danger").click()
    page.wait_for_selector(".flash")
    response = live.http.post(
        "/v/observe.whoami", json={}, headers={"Authorization": f"Bearer {secret}"}
    )
    assert response.json()["code"] == "TOKEN_REVOKED"


def test_a_member_sees_the_forbidden_message_of_the_core(page, live):
    sign_in(page, live, live.member)
    assert "needs the admin tier" in page.inner_text("main")
    page.goto(f"{live.url}/board/repositories")
    assert "No repositories" in page.inner_text("main")


def test_the_audit_feed_filters_by_task(page, live):
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    live.call(live.admin, "agenttask.cancel", {"taskId": task_id})
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/audit?taskId={task_id}")
    rows = page.locator("#audit tbody tr")
    assert rows.count() == 2
    assert "agenttask.cancel" in rows.nth(0).inner_text()
