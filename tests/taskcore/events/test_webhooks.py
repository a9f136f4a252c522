"""Webhooks end to end: endpoints added by the operator, deliveries from the event log through
the outbox, verified by a receiver with the ``standardwebhooks`` package."""

from __future__ import annotations

import pytest
from standardwebhooks import Webhook, WebhookVerificationError
from taskcore import Door, FakeClock, Service, TaskError
from taskcore.clock import SystemClock
from taskcore.events.netguard import private, resolve_target
from taskcore.events.webhook_delivery import WebhookDelivery, WebhookReply
from taskcore.events.webhooks import new_secret, secret_for_file, sign
from taskcore.operator_ops import OPERATOR_ACTOR
from taskcore.outbox import BackoffPolicy

from tests.taskcore.events.receiver import Receiver
from tests.taskcore.queue.support import MEMBER, START_MS, WORKER

FAST = BackoffPolicy(base_ms=10, cap_ms=40, attempts_max=None, deadline_ms=60_000)


def _act(service: Service, name: str, body: dict) -> dict:
    return service.dispatch(OPERATOR_ACTOR, f"operator.{name}", body, door=Door.CLI).json()


def _add(service: Service, url: str, secret: str, **extra) -> str:
    body = {"workspace": "w", "url": url, "events": ["agenttask.*"], "secret": secret}
    body.update(extra)
    return _act(service, "webhook_add", body)["endpoint"]["endpointId"]


def _fanned_out(worker: WebhookDelivery, service: Service) -> None:
    """Run the fan-out until it has passed the newest event.

    On PostgreSQL the event log's horizon may wait a moment for transactions open elsewhere in
    the cluster (it never passes a gap one of them may still fill).
    """
    import time

    with service.storage.read() as tx:
        newest = tx.audit.newest_seq()
    deadline = time.monotonic() + 15
    while True:
        worker.before_round()
        with service.storage.read() as tx:
            if (tx.webhooks.cursor() or 0) >= newest:
                return
        assert time.monotonic() < deadline, "the fan-out did not reach the newest event"
        time.sleep(0.01)


def _drain(worker: WebhookDelivery, until, rounds: int = 400) -> None:
    import time

    for _ in range(rounds):
        worker.deliver_due()
        if until():
            return
        time.sleep(0.01)
    raise AssertionError("the deliveries did not finish")


@pytest.fixture
def secret() -> str:
    return new_secret()


def test_a_receiver_verifies_signatures_sees_retries_and_deduplicates(service, secret):
    failing: set[str] = set()

    def answer(message_id: str, seen: int) -> int:
        # The first event's first two attempts fail: the receiver sees the retries.
        if not failing:
            failing.add(message_id)
        return 500 if message_id in failing and seen < 2 else 200

    receiver = Receiver(secret, answer)
    try:
        _add(service, receiver.url, secret, allow_private_targets=True)
        task_id = service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"}).json()[
            "taskId"
        ]
        service.dispatch(WORKER, "agenttask.claim", {"taskId": task_id})
        service.dispatch(MEMBER, "observe.whoami", {})  # not agenttask.*: not delivered
        worker = WebhookDelivery(service.storage, clock=SystemClock(), policy=FAST)
        _drain(worker, lambda: len(receiver.unique()) == 2 and len(receiver.received) == 4)
        assert all(r["verified"] for r in receiver.received)
        first = next(iter(failing))
        assert [r["id"] for r in receiver.received].count(first) == 3  # 500, 500, 200
        unique = receiver.unique()
        assert [u["payload"]["type"] for u in unique.values()] == [
            "agenttask.create",
            "agenttask.claim",
        ]
        claim = unique[list(unique)[1]]["payload"]["data"]
        assert (claim["taskId"], claim["statusBefore"], claim["statusAfter"]) == (
            task_id,
            "QUEUED",
            "LEASED",
        )
        assert claim["id"] == int(list(unique)[1])  # webhook-id is the event id
        # A receiver with the wrong secret rejects every message.
        wrong = Webhook(new_secret())
        for r in receiver.received:
            with pytest.raises(WebhookVerificationError):
                wrong.verify(r["body"], r["headers"])
        # The secret never travels or shows: not in a request, not in a read.
        assert all(secret.encode() not in r["body"] for r in receiver.received)
        listed = _act(service, "webhook_list", {"workspace": "w"})
        assert secret not in repr(listed)
        assert listed["endpoints"][0]["delivered"] == 2
        assert worker.deliver_due() == []  # nothing left: delivered once each
    finally:
        receiver.close()


def test_a_delivery_is_dead_after_its_window_and_can_be_redelivered(service, secret):
    clock = FakeClock(START_MS)
    receiver = Receiver(secret, lambda message_id, seen: 503)
    try:
        _add(service, receiver.url, secret, allow_private_targets=True)
        service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"})
        policy = BackoffPolicy(base_ms=1000, cap_ms=1000, attempts_max=None, deadline_ms=5000)
        worker = WebhookDelivery(service.storage, clock=clock, policy=policy)
        _fanned_out(worker, service)
        statuses = []
        for _ in range(10):
            statuses += [a.status for a in worker.deliver_due()]
            clock.advance(1000)
        assert statuses[-1] == "dead"
        assert set(statuses[:-1]) == {"queued"}
        dead = _act(service, "webhook_deliveries", {"status": "dead"})["deliveries"]
        assert [d["lastError"] for d in dead] == ["http_503"]
        with service.storage.read() as tx:
            assert tx.audit.count(operation="webhook.delivery") == 1  # the final outcome
        again = _act(service, "webhook_redeliver", {"seq": dead[0]["seq"]})["delivery"]
        assert (again["status"], again["messageId"]) == ("queued", dead[0]["messageId"])
        receiver.answer = lambda message_id, seen: 204
        assert [a.status for a in worker.deliver_due()] == ["delivered"]
        ids = {r["id"] for r in receiver.received}
        assert ids == {dead[0]["messageId"]}  # one event, one id, however many attempts
    finally:
        receiver.close()


def test_private_targets_are_refused_unless_the_operator_allows_them(service, secret):
    for url in (
        "http://127.0.0.1:9/x",
        "http://localhost:9/x",
        "http://10.0.0.7/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/x",
        "http://[::ffff:192.168.1.1]/x",
        "https://100.64.0.1/x",
    ):
        with pytest.raises(TaskError) as info:
            _add(service, url, secret)
        assert "private" in info.value.message
    assert _add(service, "http://127.0.0.1:9/x", secret, allow_private_targets=True)
    assert _add(service, "https://93.184.215.14/hooks", secret)  # a public address
    for url in ("ftp://x.example/", "http://user:pw@93.184.215.14/", "http:///nohost"):
        with pytest.raises(TaskError):
            _add(service, url, secret)
    assert [private(a) for a in ("fc00::1", "224.0.0.1", "1.1.1.1")] == [True, True, False]


def test_the_address_is_checked_again_at_delivery_and_connected_to_as_checked(service, secret):
    # DNS rebinding: the name resolved public when added, private when delivered.
    answers = {"n": 0}

    def resolver(host: str, port: int) -> list[str]:
        answers["n"] += 1
        return ["93.184.215.14"] if answers["n"] == 1 else ["127.0.0.1"]

    sent = []

    class Transport:
        def send(self, request, timeout):
            sent.append(request.target.address)
            return WebhookReply(status=200)

    with service.storage.write() as tx:
        from taskcore.events.webhooks import add_endpoint

        add_endpoint(
            tx,
            endpoint_id="we_" + "a" * 32,
            workspace="w",
            url="https://hooks.example/agent-task",
            events=("*",),
            secret=secret,
            allow_private=False,
            description="",
            now_ms=START_MS,
            resolver=resolver,
        )
    service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"})
    worker = WebhookDelivery(
        service.storage, clock=SystemClock(), policy=FAST, resolver=resolver, transport=Transport()
    )
    _fanned_out(worker, service)
    attempts = worker.deliver_due()
    assert [a.last_error for a in attempts] == ["private_address"]
    assert sent == []  # nothing was sent anywhere
    target = resolve_target(
        "https://hooks.example/x", allow_private=False, resolver=lambda h, p: ["93.184.215.14"]
    )
    assert (target.host, target.port, target.address) == ("hooks.example", 443, "93.184.215.14")


def test_only_the_endpoints_workspace_and_patterns_and_events_after_it_are_sent(service, secret):
    from tests.taskcore.queue.support import OUTSIDER

    receiver = Receiver(secret)
    try:
        service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"})  # before the add
        _add(service, receiver.url, secret, allow_private_targets=True, events=["agenttask.cl*"])
        task_id = service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"}).json()[
            "taskId"
        ]
        service.dispatch(WORKER, "agenttask.claim", {"taskId": task_id})
        service.dispatch(OUTSIDER, "agenttask.create", {"verb": "agent.run"})  # other workspace
        worker = WebhookDelivery(service.storage, clock=SystemClock(), policy=FAST)
        _drain(worker, lambda: len(receiver.unique()) >= 1)
        worker.deliver_due()
        assert [u["payload"]["type"] for u in receiver.unique().values()] == ["agenttask.claim"]
    finally:
        receiver.close()


def test_a_removed_endpoint_gets_nothing_more(service, secret):
    receiver = Receiver(secret)
    try:
        endpoint = _add(service, receiver.url, secret, allow_private_targets=True)
        service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"})
        worker = WebhookDelivery(service.storage, clock=SystemClock(), policy=FAST)
        _fanned_out(worker, service)  # fanned out, not sent
        removed = _act(service, "webhook_remove", {"endpoint_id": endpoint})
        assert removed == {"workspace": "w", "endpointId": endpoint, "wasLive": True}
        worker.deliver_due()
        assert receiver.received == []
        listed = _act(service, "webhook_list", {"workspace": "w", "removed": True})["endpoints"]
        assert (listed[0]["dead"], listed[0]["removedAtMs"] is not None) == (1, True)
        with pytest.raises(TaskError) as info:
            _act(service, "webhook_test", {"endpoint_id": endpoint})
        assert info.value.code.value == "NOT_FOUND"
    finally:
        receiver.close()


def test_a_test_message_is_signed_and_delivered_at_once(service, secret):
    receiver = Receiver(secret)
    try:
        endpoint = _add(service, receiver.url, secret, allow_private_targets=True)
        queued = _act(service, "webhook_test", {"endpoint_id": endpoint})["delivery"]
        worker = WebhookDelivery(service.storage, clock=SystemClock(), policy=FAST)
        attempt = worker.deliver_one(queued["seq"])
        assert (attempt.status, attempt.http_status) == ("delivered", 200)
        (got,) = receiver.unique().values()
        assert got["payload"]["type"] == "webhook.test"
        assert got["id"] == queued["messageId"]
        assert worker.deliver_one(queued["seq"]) is None  # delivered: not sent again
    finally:
        receiver.close()


def test_two_workers_fanning_out_at_once_write_each_delivery_once(service, secret):
    import threading

    receiver = Receiver(secret)
    try:
        _add(service, receiver.url, secret, allow_private_targets=True)
        for _ in range(20):
            service.dispatch(MEMBER, "agenttask.create", {"verb": "agent.run"})
        workers = [
            WebhookDelivery(service.storage, clock=SystemClock(), policy=FAST) for _ in range(3)
        ]
        threads = [threading.Thread(target=w.deliver_due) for w in workers for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _drain(workers[0], lambda: len(receiver.unique()) == 20)
        assert len(receiver.received) == 20  # each delivered once, none twice
        counts = _act(service, "webhook_list", {})["endpoints"][0]
        assert (counts["delivered"], counts["queued"], counts["dead"]) == (20, 0, 0)
    finally:
        receiver.close()


def test_the_secret_file_is_made_once_private_and_reused(tmp_path):
    path = tmp_path / "hook.secret"
    secret, created = secret_for_file(path)
    assert created
    assert secret.startswith("whsec_")
    assert path.stat().st_mode & 0o777 == 0o600
    assert secret_for_file(path) == (secret, False)
    path.chmod(0o644)
    with pytest.raises(TaskError):
        secret_for_file(path)
    path.chmod(0o600)
    path.write_text("not a secret\n")
    with pytest.raises(TaskError):
        secret_for_file(path)


def test_signatures_match_the_standard_webhooks_library(secret):
    body = b'{"type":"agenttask.create"}'
    headers = {
        "webhook-id": "42",
        "webhook-timestamp": str(int(__import__("time").time())),
    }
    headers["webhook-signature"] = sign(secret, "42", int(headers["webhook-timestamp"]), body)
    assert Webhook(secret).verify(body, headers) == {"type": "agenttask.create"}
