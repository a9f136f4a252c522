"""The board in a real browser (Playwright driving Debian's Chromium) against a live service."""

from __future__ import annotations

import re

from taskcore import Tier
from taskcore.auth import issue_token
from taskhttp import BackgroundServer, create_app

from tests.taskboard.conftest import sign_in
from tests.taskcore.collector.conftest import recipe
from tests.taskcore.evidence.flow import Flow

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
    victim = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    claim = live.call(live.member, "agenttask.claim", {"taskId": task_id})
    escalated = live.call(
        live.member,
        "agenttask.escalate",
        {
            "taskId": task_id,
            "targetVerb": "agenttask.cancel",
            "targetInput": {"taskId": victim},
            "reason": "needs prod " + XSS_SCRIPT,
            "fence": claim["lease"]["fence"],
        },
    )
    gate_id = escalated["gate"]["gateId"]
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/approvals")
    card = page.locator(f"article[data-gate='{gate_id}']")
    grant = card.locator(".grant").inner_text()
    # What approving does, in words that hold: the claim consumes nothing, gate.apply does.
    assert f"Approving requeues task {task_id} with a one-shot grant" in grant
    assert "run agenttask.cancel once" in grant
    assert escalated["gate"]["inputHash"] in grant
    assert "through agenttask.gate.apply, which consumes the grant" in grant
    assert "Claiming the task consumes nothing." in grant
    assert "consumed by that claim" not in grant
    assert "run agenttask.cancel" in card.inner_text()
    assert XSS_SCRIPT in card.locator(".reason").inner_text()  # shown as text, inert
    card.locator("button.approve").click()
    page.wait_for_selector(".flash")
    assert "Approved" in page.inner_text(".flash")
    admitted = live.call(live.member, "agenttask.claim", {"taskId": task_id})
    assert admitted["lease"]["grant"]["gateId"] == gate_id
    assert admitted["lease"]["grant"]["targetVerb"] == "agenttask.cancel"
    applied = live.call(
        live.member,
        "agenttask.gate.apply",
        {
            "taskId": task_id,
            "gateId": gate_id,
            "verb": "agenttask.cancel",
            "input": {"taskId": victim},
        },
    )
    assert applied["gate"]["status"] == "CONSUMED"
    assert page.evaluate("window.__pwned") is None


def test_a_gate_that_names_no_call_says_it_admits_none(page, live):
    task_id = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    named = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    bare = live.call(live.admin, "agenttask.escalate", {"taskId": task_id})["gate"]["gateId"]
    unbound = live.call(
        live.admin, "agenttask.escalate", {"taskId": named, "targetVerb": "agenttask.reorder"}
    )["gate"]["gateId"]
    outside = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    elsewhere = live.call(
        live.admin, "agenttask.escalate", {"taskId": outside, "targetVerb": "deploy.prod"}
    )["gate"]["gateId"]
    sign_in(page, live, live.admin)
    page.goto(f"{live.url}/board/approvals")
    card = page.locator(f"article[data-gate='{bare}']")
    assert "continue the task (no call named)" in card.inner_text()
    grant = card.locator(".grant").inner_text()
    assert "The gate names no call, so it admits none" in grant
    assert "GRANT_VERB_MISMATCH" in grant
    assert "any input" not in grant
    grant = page.locator(f"article[data-gate='{unbound}'] .grant").inner_text()
    assert "names agenttask.reorder but binds no input, so it admits no call" in grant
    assert "GRANT_INPUT_MISMATCH" in grant
    grant = page.locator(f"article[data-gate='{elsewhere}'] .grant").inner_text()
    assert "names deploy.prod, which is no operation of this service" in grant
    assert "UNKNOWN_OPERATION" in grant


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


def test_a_token_is_shown_once_on_creation_and_revoked_only_once_confirmed(page, live):
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
    page.locator("#tokens tr", has_text=token_id).locator("a.danger").click()
    # A confirmation page names the token and what revoking does; nothing is revoked yet.
    page.wait_for_selector("#confirm-revoke")
    confirm = page.inner_text("#confirm-revoke")
    assert token_id in confirm
    assert "ci-runner" in confirm
    assert "TOKEN_REVOKED" in confirm
    assert live.call(secret, "observe.whoami")["workspace"] == "ws1"
    page.click("#confirm-revoke a:has-text('Cancel')")
    page.wait_for_url("**/board/tokens")
    assert live.call(secret, "observe.whoami")["workspace"] == "ws1"
    # A POST without the confirmation (a stale page, a script) is asked first, not obeyed.
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    asked = page.request.post(
        f"{live.url}/board/tokens/{token_id}/revoke", form={"csrf": csrf}, max_redirects=0
    )
    assert asked.status == 303
    assert asked.headers["location"].endswith(f"/board/tokens/{token_id}/revoke")
    assert live.call(secret, "observe.whoami")["workspace"] == "ws1"
    page.locator("#tokens tr", has_text=token_id).locator("a.danger").click()
    page.click("#confirm-revoke button.danger")
    page.wait_for_selector(".flash")
    assert f"Token {token_id} revoked." in page.inner_text(".flash")
    response = live.http.post(
        "/v/observe.whoami", json={}, headers={"Authorization": f"Bearer {secret}"}
    )
    assert response.json()["code"] == "TOKEN_REVOKED"


def test_the_queue_table_shows_each_tasks_title(page, live):
    titled = live.call(
        live.admin,
        "agenttask.create",
        {"verb": "agent.run", "payload": {"title": "Fix the flaky test"}},
    )["taskId"]
    goal = live.call(
        live.admin, "agenttask.create", {"verb": "agent.run", "payload": {"goal": "demo"}}
    )["taskId"]
    untitled = live.call(live.admin, "agenttask.create", {"verb": "agent.run"})["taskId"]
    sign_in(page, live, live.admin)
    row = page.locator("#backlog tr", has_text=titled[:15])
    assert row.locator(".title").inner_text() == "Fix the flaky test"
    assert page.locator("#backlog tr", has_text=goal[:15]).locator(".title").inner_text() == "demo"
    assert page.locator("#backlog tr", has_text=untitled[:15]).locator(".title").count() == 0
    page.goto(f"{live.url}/board/tasks/{titled}")
    assert "Fix the flaky test" in page.inner_text("h1")


def test_pages_have_a_favicon_and_log_no_console_error(page, live):
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(f"{live.url}/board/login")
    sign_in(page, live, live.admin)
    for path in ("queue", "approvals", "repositories", "audit", "tokens"):
        page.goto(f"{live.url}/board/{path}")
    href = page.locator("link[rel=icon]").get_attribute("href")
    icon = page.request.get(f"{live.url}{href}")
    assert icon.status == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    page.wait_for_timeout(500)
    assert errors == []
    assert failed == []


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
    # Once streaming, the page has looked again (board.js), and its own first load (an
    # observe.audit naming the task) may be listed too: the task's acts are the two, newest first.
    page.wait_for_selector("#live[data-live-mode='stream']", timeout=15_000)
    rows = page.locator("#audit tbody tr").all_inner_texts()
    operations = [row.split("\t")[3] for row in rows]
    assert [op for op in operations if op != "observe.audit"] == [
        "agenttask.cancel",
        "agenttask.create",
    ]


def test_a_failed_run_is_not_shown_green_on_its_subject_page(
    page, authority, state, tmp_path, module_backend
):
    # module_backend: on PostgreSQL the module's database (the authority's and flow's journal).
    flow = Flow(authority, state, tmp_path, command=recipe("echo broken >&2; exit 1"))
    try:
        flow.run_to_receipt()  # a collection that failed: the task finishes, not passing
        admin = issue_token(
            flow.service.storage, flow.clock, workspace="w1", tier=Tier.ADMIN, autonomy=3
        ).token
        with BackgroundServer(create_app(flow.service)) as url:
            page.goto(f"{url}/board/login")
            page.fill("#token", admin)
            page.click("button[type=submit]")
            page.wait_for_url("**/board/queue")
            page.goto(f"{url}/board/subject?repository=acme&seq=1")
            status = page.locator("article.card h3 .status")
            assert status.inner_text() == "finished · failed"
            assert "s-failed" in status.get_attribute("class")
            ok = page.evaluate(
                "getComputedStyle(document.documentElement).getPropertyValue('--ok').trim()"
            )
            shown = status.evaluate("e => getComputedStyle(e).color")
            assert shown != page.evaluate(
                "c => { const e = document.createElement('i'); e.style.color = c;"
                " document.body.append(e); return getComputedStyle(e).color; }",
                ok,
            )
            assert "broken" in page.inner_text("pre.excerpt")
    finally:
        flow.service.close()
