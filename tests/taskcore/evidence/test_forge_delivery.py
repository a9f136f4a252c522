"""Delivering statuses to a local forge that checks every request against the documented shape."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from taskcore.authority import revoke_executor
from taskcore.clock import SystemClock
from taskcore.evidence.forge import ForgeStatusConfig, apply_forge_settings
from taskcore.evidence.forge_delivery import (
    GITHUB_API_VERSION,
    BackoffPolicy,
    ForgeDelivery,
    ForgeReply,
    ForgeRequest,
    UrllibTransport,
    build_request,
)
from taskcore.service import Service

from tests.taskcore.collector.conftest import Live, head, recipe

from .forge_server import GITHUB_SHAPE, GITLAB_SHAPE, FakeForge, violations

TOKEN = "ghp_s3cretTOKENvalue0123456789"
POLICY = BackoffPolicy(base_ms=1_000, cap_ms=8_000, attempts_max=6)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "forge.token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def publish(live, forge: FakeForge, token_file: Path, kind: str = "github") -> None:
    apply_forge_settings(
        live.service.storage,
        live.clock,
        workspace="w1",
        repository_id="acme",
        profile_id="default",
        config=ForgeStatusConfig(
            repository_id="acme",
            kind=kind,
            api_url=forge.url if kind == "github" else forge.url + "/api/v4",
            project="octo/acme" if kind == "github" else "octo/acme-project",
            token_file=str(token_file),
            target_url="https://board.example/receipts/{receipt_digest}",
        ),
    )


def qualify(live, change="c1"):
    live.checkpoint(change)
    out = live.collect(change)
    assert out["qualification"]["qualified"] is True
    return out["qualification"]["receipt_digest"]


def delivery(live, **kwargs) -> ForgeDelivery:
    kwargs.setdefault("policy", POLICY)
    return ForgeDelivery(live.service.storage, clock=live.clock, **kwargs)


def outbox(live):
    with live.service.storage.read() as tx:
        return list(reversed(tx.forge.rows("acme", 100)))


@pytest.fixture
def github(live, token_file):
    forge = FakeForge(GITHUB_SHAPE)
    publish(live, forge, token_file)
    yield forge
    forge.close()


# -- the documented shapes ------------------------------------------------------------------------


def test_a_receipt_is_delivered_to_github_in_the_documented_shape(live, github):
    receipt = qualify(live)
    attempts = delivery(live).deliver_due()
    assert [a.status for a in attempts] == ["delivered"]
    assert github.violations == []
    (request,) = github.requests
    assert request["path"] == f"/repos/octo/acme/statuses/{head(live.repo)}"
    assert request["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert request["headers"]["x-github-api-version"] == GITHUB_API_VERSION
    assert request["body"] == {
        "state": "success",
        "context": "agent-task/default",
        "description": f"agent-task: qualified, receipt {receipt[:16]}",
        "target_url": f"https://board.example/receipts/{receipt}",
    }
    assert outbox(live)[-1].status == "delivered"
    assert delivery(live).deliver_due() == []


def test_gitlab_gets_its_own_shape_and_state_spelling(authority, state, tmp_path, token_file):
    forge = FakeForge(GITLAB_SHAPE)
    failing = Live(authority, state, tmp_path, command=recipe("exit 1"))
    try:
        publish(failing, forge, token_file, kind="gitlab")
        failing.checkpoint()
        failing.collect()
        attempts = delivery(failing).deliver_due()
        assert [a.status for a in attempts] == ["delivered"]
        assert forge.violations == []
        (request,) = forge.requests
        assert (
            request["path"] == f"/api/v4/projects/octo%2Facme-project/statuses/{head(failing.repo)}"
        )
        assert request["headers"]["private-token"] == TOKEN
        assert request["body"]["state"] == "failed"
        assert request["body"]["name"] == "agent-task/default"
    finally:
        failing.close()
        forge.close()


def test_a_claim_is_delivered_as_pending(live, github):
    live.checkpoint()
    # Deliver the pending status of the claim before the run finishes.
    from taskcore.collector.client import qualification

    q = qualification(live.client, repository="acme", profile="default", change="c1")
    task = next(t for t in q["tasks"] if t["task_id"] == q["next"]["task_id"])
    live.client.workflow(
        "acme",
        "default",
        "collector_claim",
        json.dumps(
            {
                "version": 1,
                "request_id": "r1",
                "task_id": task["task_id"],
                "task_digest": task["task_digest"],
                "execution_operation_id": "op1",
                "requested_lease_ms": 60000,
            }
        ).encode(),
    )
    delivery(live).deliver_due()
    assert github.states() == ["pending"]


def test_revocation_is_delivered_as_error(live, github):
    qualify(live)
    delivery(live).deliver_due()
    revoke_executor(live.authority.storage, live.clock, registration_id="reg-1", reason="lost")
    delivery(live).deliver_due()
    assert github.states() == ["success", "error"]
    assert github.requests[-1]["body"]["description"] == (
        "agent-task: receipt withdrawn (executor_revoked)"
    )
    assert github.violations == []


def test_the_shapes_refuse_what_the_docs_do_not_allow():
    good = b'{"state": "success", "context": "agent-task/p", "description": "ok"}'
    headers = {
        "Accept": "application/vnd.github+json",
        "Authorization": "Bearer x",
        "X-GitHub-Api-Version": "2022-11-28",
        "Content-Type": "application/json",
        "User-Agent": "t",
    }
    path = "/repos/o/r/statuses/" + "a" * 40
    assert violations(GITHUB_SHAPE, "POST", path, headers, good) == []
    assert violations(GITHUB_SHAPE, "POST", path, headers, b'{"state": "failed"}') == [
        "state='failed'"
    ]
    assert violations(GITHUB_SHAPE, "POST", path, {}, good)
    assert violations(
        GITLAB_SHAPE,
        "POST",
        "/api/v4/projects/1/statuses/" + "a" * 40,
        {"Content-Type": "application/json"},
        b'{"state": "success"}',
    ) == ["no accepted credential header"]


def test_gitlab_with_a_bearer_token_uses_the_authorization_header():
    import json as json_module

    from taskcore.store.forge_api import OutboxRecord

    row = OutboxRecord(
        seq=1,
        repository_id="acme",
        profile_id="p",
        subject_seq=1,
        change_id="c",
        commit="a" * 40,
        revision="b" * 64,
        context="agent-task/p",
        state="error",
        cause="receipt_withdrawn",
        description="d",
        target_url="https://b.example/x",
        receipt_digest=None,
        kind="gitlab",
        api_url="https://gitlab.example/api/v4",
        project="42",
        token_file="/t",
        token_header="bearer",
        status="queued",
        attempts=0,
        next_attempt_at_ms=0,
        last_error=None,
        created_at_ms=0,
        updated_at_ms=0,
    )
    request = build_request(row, TOKEN)
    headers = {k.lower(): v for k, v in request.headers}
    assert request.url == "https://gitlab.example/api/v4/projects/42/statuses/" + "a" * 40
    assert (
        violations(
            GITLAB_SHAPE,
            "POST",
            request.url.split("gitlab.example")[1],
            dict(request.headers),
            request.body,
        )
        == []
    )
    assert "private-token" not in headers
    assert json_module.loads(request.body)["state"] == "failed"


def test_the_request_never_shows_its_token_when_printed():
    from taskcore.store.forge_api import OutboxRecord

    row = OutboxRecord(
        seq=1,
        repository_id="acme",
        profile_id="p",
        subject_seq=1,
        change_id="c",
        commit="a" * 40,
        revision="b" * 64,
        context="agent-task/p",
        state="success",
        cause="receipt",
        description="d",
        target_url=None,
        receipt_digest=None,
        kind="github",
        api_url="https://api.github.com",
        project="o/r",
        token_file="/t",
        token_header="bearer",
        status="queued",
        attempts=0,
        next_attempt_at_ms=0,
        last_error=None,
        created_at_ms=0,
        updated_at_ms=0,
    )
    request = build_request(row, TOKEN)
    assert isinstance(request, ForgeRequest)
    assert TOKEN not in repr(request)
    assert TOKEN not in str(request)


# -- retries ----------------------------------------------------------------------------------------


def test_fails_three_times_then_succeeds_with_exponential_back_off(live, token_file):
    forge = FakeForge(GITHUB_SHAPE, replies=[503, 502, 500])
    try:
        publish(live, forge, token_file)
        qualify(live)
        worker = delivery(live)
        seen = []
        for expected_wait in (1_000, 2_000, 4_000):
            (attempt,) = worker.deliver_due()
            seen.append(attempt.last_error)
            row = outbox(live)[-1]
            assert row.status == "queued"
            assert row.next_attempt_at_ms - live.clock.now_ms() == expected_wait
            live.clock.advance(expected_wait - 1)
            assert worker.deliver_due() == []  # not due yet
            live.clock.advance(1)
        (attempt,) = worker.deliver_due()
        assert attempt.status == "delivered"
        assert seen == ["http_503", "http_502", "http_500"]
        assert outbox(live)[-1].attempts == 4
        assert len(forge.requests) == 4
        assert forge.violations == []
    finally:
        forge.close()


def test_a_forge_restart_and_a_service_restart_in_between(live, token_file, tmp_path):
    forge = FakeForge(GITHUB_SHAPE, replies=[503, 503, 503])
    port = forge.port
    publish(live, forge, token_file)
    qualify(live)
    worker = delivery(live)
    for _ in range(2):
        (attempt,) = worker.deliver_due()
        assert attempt.last_error == "http_503"
        live.clock.advance(POLICY.cap_ms)
    forge.close()  # the forge goes down
    (attempt,) = worker.deliver_due()
    assert attempt.last_error == "unreachable"
    live.clock.advance(POLICY.cap_ms)
    # The service restarts: a new process opens the same journal; the row is still queued.
    live.service.close()
    reopened = Service.open(tmp_path / "data", clock=live.clock)
    try:
        forge = FakeForge(GITHUB_SHAPE, port=port, replies=[503])  # back, fails once more
        again = ForgeDelivery(reopened.storage, clock=live.clock, policy=POLICY)
        (attempt,) = again.deliver_due()
        assert attempt.last_error == "http_503"
        live.clock.advance(POLICY.cap_ms)
        (attempt,) = again.deliver_due()
        assert attempt.status == "delivered"
        with reopened.storage.read() as tx:
            row = tx.forge.rows("acme", 1)[0]
        assert (row.status, row.attempts) == ("delivered", 5)
        assert forge.violations == []
        forge.close()
    finally:
        reopened.close()
        live.service = Service.open(tmp_path / "data", clock=live.clock)


def test_a_4xx_is_recorded_and_never_retried(live, token_file):
    forge = FakeForge(GITHUB_SHAPE, replies=[422])
    try:
        publish(live, forge, token_file)
        qualify(live)
        (attempt,) = delivery(live).deliver_due()
        assert (attempt.status, attempt.last_error) == ("refused", "http_422")
        live.clock.advance(10 * POLICY.cap_ms)
        assert delivery(live).deliver_due() == []
        assert len(forge.requests) == 1
    finally:
        forge.close()


def test_a_429_is_retried_after_its_retry_after(live, token_file):
    forge = FakeForge(GITHUB_SHAPE, replies=[429], retry_after="5")
    try:
        publish(live, forge, token_file)
        qualify(live)
        (attempt,) = delivery(live).deliver_due()
        assert (attempt.status, attempt.last_error) == ("queued", "http_429")
        assert outbox(live)[-1].next_attempt_at_ms - live.clock.now_ms() == 5_000
        live.clock.advance(5_000)
        assert [a.status for a in delivery(live).deliver_due()] == ["delivered"]
    finally:
        forge.close()


def test_a_forge_that_never_recovers_is_given_up_after_the_bound(live, token_file):
    forge = FakeForge(GITHUB_SHAPE, replies=[503] * 20)
    try:
        publish(live, forge, token_file)
        qualify(live)
        worker = delivery(live)
        statuses = []
        for _ in range(POLICY.attempts_max):
            statuses += [a.status for a in worker.deliver_due()]
            live.clock.advance(POLICY.cap_ms)
        assert statuses == ["queued"] * (POLICY.attempts_max - 1) + ["given_up"]
        assert worker.deliver_due() == []
        assert len(forge.requests) == POLICY.attempts_max
    finally:
        forge.close()


def test_an_unreadable_token_file_is_retried_without_a_request(live, github, token_file):
    qualify(live)
    token_file.unlink()
    (attempt,) = delivery(live).deliver_due()
    assert (attempt.status, attempt.last_error) == ("queued", "token_unreadable")
    assert github.requests == []
    token_file.write_text(TOKEN)
    live.clock.advance(POLICY.base_ms)
    assert [a.status for a in delivery(live).deliver_due()] == ["delivered"]


def test_a_slow_forge_times_out_and_is_retried(live, token_file):
    class Slow:
        def send(self, request, timeout):
            raise TimeoutError("timed out")

    forge = FakeForge(GITHUB_SHAPE)
    try:
        publish(live, forge, token_file)
        qualify(live)
        (attempt,) = delivery(live, transport=Slow()).deliver_due()
        assert (attempt.status, attempt.last_error) == ("queued", "timeout")
    finally:
        forge.close()


def test_a_second_worker_leaves_leased_rows_alone(live, github):
    qualify(live)
    sent = []

    class Recording:
        def send(self, request, timeout):
            sent.append(request.url)
            # While the first worker sends, a second worker runs a round.
            assert ForgeDelivery(live.service.storage, clock=live.clock).deliver_due() == []
            return ForgeReply(status=201)

    assert [a.status for a in delivery(live, transport=Recording()).deliver_due()] == ["delivered"]
    assert len(sent) == 1


# -- secrets ----------------------------------------------------------------------------------------


def test_the_token_never_reaches_the_journal_the_audit_or_an_error(live, token_file, tmp_path):
    forge = FakeForge(GITHUB_SHAPE, replies=[401, 503])
    try:
        publish(live, forge, token_file)
        qualify(live)
        revoke_executor(live.authority.storage, live.clock, registration_id="reg-1", reason="x")
        worker = delivery(live)
        for _ in range(3):
            worker.deliver_due()
            live.clock.advance(POLICY.cap_ms)
        assert any(r["headers"].get("authorization") == f"Bearer {TOKEN}" for r in forge.requests)
        for row in outbox(live):
            assert TOKEN not in repr(row)
        live.service.close()
        for path in (tmp_path / "data").iterdir():
            assert TOKEN.encode() not in path.read_bytes(), path.name
    finally:
        forge.close()
        live.service = Service.open(tmp_path / "data", clock=live.clock)


def test_each_final_outcome_is_audited_once(live, github):
    qualify(live)
    delivery(live).deliver_due()
    assert live.service.audit_count(operation="forge.status") == 1


# -- the background worker ------------------------------------------------------------------------


def test_the_worker_thread_delivers_without_being_asked(authority, state, tmp_path, token_file):
    forge = FakeForge(GITHUB_SHAPE)
    world = Live(authority, state, tmp_path)
    worker = ForgeDelivery(world.service.storage, clock=SystemClock(), poll_ms=20).start()
    try:
        publish(world, forge, token_file)
        world.checkpoint()
        world.collect()
        deadline = time.monotonic() + 10
        while "success" not in forge.states() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "success" in forge.states()
    finally:
        worker.stop()
        world.close()
        forge.close()


class _TrickleForge:
    """Accepts, then answers one byte every 0.2 s: each read succeeds, no answer ever ends."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/repos/o/r/statuses/abc"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.held.append(conn)
        try:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                conn.sendall(bytes([byte]))
                time.sleep(0.2)
        except OSError:
            return

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


def test_the_timeout_bounds_the_whole_exchange_not_each_read():
    forge = _TrickleForge()
    request = ForgeRequest(method="POST", url=forge.url, headers=(), body=b"{}")
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="within 1 s"):
            UrllibTransport().send(request, 1.0)
        # Each byte arrives well inside the per-read timeout; only the whole-exchange bound
        # ends it (without it this call would read for over half an hour).
        assert time.monotonic() - started < 10
    finally:
        forge.close()


def test_an_answer_that_is_not_http_is_unreachable_not_a_crash():
    server = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{server.getsockname()[1]}/x"

    def garbage() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        conn.close()

    threading.Thread(target=garbage, daemon=True).start()
    try:
        with pytest.raises(OSError, match="not HTTP"):
            UrllibTransport().send(ForgeRequest(method="POST", url=url, headers=(), body=b"{}"), 5)
    finally:
        server.close()
