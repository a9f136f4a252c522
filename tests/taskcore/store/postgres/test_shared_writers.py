"""The shared writer lock: row-safe queue verbs run concurrently on PostgreSQL, all else waits.

``PostgresStorage.write_shared`` takes the shared form of the writer advisory lock; the front
door runs an operation declared ``row_safe`` (``agenttask.create``, ``claimNext``,
``checkpoint``, ``release``) there. Real threads on a real database:

* while a shared writer is open, a row-safe call still commits and an exclusive one (a
  ``cancel``) waits for it and gets ``BUSY`` at its timeout;
* workers create, claim and finish tasks concurrently while an operator revokes one of their
  tokens: every call of that token the revocation's commit precedes is refused (by the
  audit sequence, which the exclusive revocation draws after every shared writer in flight
  committed, and by the calls that started after it returned), and no task is claimed twice.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from taskcore.actors import Tier
from taskcore.auth import IssuedToken, issue_token
from taskcore.clock import SystemClock
from taskcore.errors import ErrorCode, ErrorKind, TaskError
from taskcore.operator_ops import OPERATOR_ACTOR
from taskcore.queue.operations import ROW_SAFE_VERBS
from taskcore.service import Door, Service, ServiceConfig, default_registry
from taskcore.store import open_storage

WORKSPACE = "w"


def _service(tmp_path: Path, url: str, *, busy_timeout_ms: int = 10_000) -> Service:
    sep = "&" if "?" in url else "?"
    storage = open_storage(
        tmp_path / "data",
        create=True,
        database=f"{url}{sep}pool_size=12",
        busy_timeout_ms=busy_timeout_ms,
    )
    return Service(storage, config=ServiceConfig(data_dir=tmp_path / "data"))


def _token(service: Service, name: str) -> IssuedToken:
    return issue_token(
        service.storage, SystemClock(), workspace=WORKSPACE, tier=Tier.MEMBER, autonomy=3, name=name
    )


def test_the_row_safe_declaration_is_the_queue_verbs_that_need_no_single_writer():
    registry = default_registry()
    declared = {name for name in registry.names() if registry.get(name).row_safe}
    assert declared == set(ROW_SAFE_VERBS)
    assert declared == {
        "agenttask.create",
        "agenttask.claimNext",
        "agenttask.checkpoint",
        "agenttask.release",
    }


def test_row_safe_calls_run_beside_a_shared_writer_and_exclusive_ones_wait(postgres_url, tmp_path):
    service = _service(tmp_path, postgres_url, busy_timeout_ms=300)
    try:
        bearer = _token(service, "worker").token
        created = service.call(bearer, "agenttask.create", {"verb": "agent.run"}).json()
        outcomes: dict[str, str] = {}

        def run(name: str, body: dict[str, object]) -> None:
            try:
                service.call(bearer, name, body)
                outcomes[name] = "OK"
            except TaskError as err:
                outcomes[name] = err.code.value

        assert getattr(service.storage, "shares_writers", False)
        with service.storage.write_shared() as held:  # type: ignore[attr-defined]
            held.conn.execute("SELECT 1")  # the lock comes with the first statement's BEGIN
            for name, body in (
                ("agenttask.create", {"verb": "agent.run"}),
                ("agenttask.cancel", {"taskId": created["taskId"]}),
            ):
                thread = threading.Thread(target=run, args=(name, body))
                thread.start()
                thread.join()
        assert outcomes == {"agenttask.create": "OK", "agenttask.cancel": ErrorCode.BUSY.value}
        run("agenttask.cancel", {"taskId": created["taskId"]})  # the lock is free again
        assert outcomes["agenttask.cancel"] == "OK"
    finally:
        service.close()


def _audit_rows(url: str) -> list[tuple[int, str, str, str, int]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT seq, actor, operation, outcome, calls FROM audit_event ORDER BY seq"
        ).fetchall()
    return [(int(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4])) for r in rows]


@pytest.mark.slow
def test_no_call_of_a_revoked_token_succeeds_after_the_revocation_commits(postgres_url, tmp_path):
    service = _service(tmp_path, postgres_url)
    victim = _token(service, "victim")
    others = [_token(service, f"other-{i}") for i in range(3)]
    workers = [victim, victim, *others]
    revoked = threading.Event()
    stop = threading.Event()
    cycles: Counter[str] = Counter()
    cycles_lock = threading.Lock()
    # (token id, started after the revocation returned, operation, outcome)
    calls: list[tuple[str, bool, str, str]] = []
    claimed: list[tuple[str, int]] = []
    failures: list[BaseException] = []

    def call(token: IssuedToken, name: str, body: dict[str, object]) -> dict[str, object] | None:
        after = revoked.is_set()
        try:
            answer = service.call(token.token, name, body).json()
        except TaskError as err:
            calls.append((token.record.token_id, after, name, err.code.value))
            return None
        calls.append((token.record.token_id, after, name, "OK"))
        return answer if isinstance(answer, dict) else None

    def work(token: IssuedToken) -> None:
        try:
            while not stop.is_set():
                call(token, "agenttask.create", {"verb": "agent.run"})
                got = call(token, "agenttask.claimNext", {})
                if got is not None and got.get("claimed"):
                    lease = got["lease"]
                    assert isinstance(lease, dict)
                    claimed.append((str(lease["taskId"]), int(lease["fence"])))
                    call(
                        token,
                        "agenttask.checkpoint",
                        {"taskId": lease["taskId"], "fence": lease["fence"], "status": "DONE"},
                    )
                with cycles_lock:
                    cycles[token.record.token_id] += 1
        except BaseException as exc:  # a worker's failure fails the test
            failures.append(exc)
            stop.set()

    def cycles_of(token: IssuedToken) -> int:
        with cycles_lock:
            return cycles[token.record.token_id]

    def wait_for(predicate: object) -> None:
        # No timed assertion: poll until the workers got there (or one of them failed).
        assert callable(predicate)
        while not predicate() and not stop.is_set():
            stop.wait(0.01)

    threads = [threading.Thread(target=work, args=(t,)) for t in workers]
    try:
        for thread in threads:
            thread.start()
        wait_for(lambda: all(cycles_of(t) >= 10 for t in workers))
        answer = service.invoke(
            OPERATOR_ACTOR,
            "operator.token_revoke",
            {"token_id": victim.record.token_id},
            door=Door.CLI,
        )
        assert answer.was_live
        revoked.set()
        base = {t.record.token_id: cycles_of(t) for t in workers}
        wait_for(lambda: all(cycles_of(t) >= base[t.record.token_id] + 10 for t in workers))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    service.flush_refusals()
    rows = _audit_rows(postgres_url)
    service.close()
    assert failures == []

    # After the revocation returned, every call of the victim is refused; nothing else is.
    late = [c for c in calls if c[0] == victim.record.token_id and c[1]]
    assert len(late) >= 20
    assert {c[3] for c in late} == {ErrorCode.TOKEN_REVOKED.value}
    assert any(c[3] == "OK" for c in calls if c[0] == victim.record.token_id and not c[1])
    other_ids = {t.record.token_id for t in others}
    assert {c[3] for c in calls if c[0] in other_ids} == {"OK"}
    assert sum(1 for c in calls if c[0] in other_ids and c[1]) >= 30

    # By commit order: the revocation's audit row is drawn after every shared writer in flight
    # committed; no OK row of the victim comes after it, every later one is a refusal.
    (revoke_seq,) = [s for s, _, op, outcome, _ in rows if op == "operator.token_revoke"]
    victim_rows = [
        (s, op, outcome) for s, actor, op, outcome, _ in rows if actor == victim.record.token_id
    ]
    assert max(s for s, _, outcome in victim_rows if outcome == "OK") < revoke_seq
    # (Refusals at authentication are the anonymous actor's rows; the guard's are the token's.)
    assert {outcome for s, _, outcome in victim_rows if s > revoke_seq} <= {
        ErrorCode.TOKEN_REVOKED.value
    }
    # Audit rows = calls; no task claimed twice (each claim's fence is the task's first).
    assert sum(r[4] for r in rows if r[2].startswith("agenttask.")) == len(calls)
    assert len({task for task, _ in claimed}) == len(claimed)
    assert {fence for _, fence in claimed} == {1}


def test_a_deadlock_or_serialization_failure_is_busy_never_internal(postgres_url, tmp_path):
    """Concurrent writers can lose to PostgreSQL's deadlock detector: that is BUSY (retry)."""
    service = _service(tmp_path, postgres_url)
    try:
        storage = service.storage
        for sql in (
            "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40P01'; END $$",  # deadlock_detected
            "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40001'; END $$",  # serialization
        ):
            with pytest.raises(TaskError) as info, storage.write_shared() as tx:  # type: ignore[attr-defined]
                tx.conn.execute(sql)
            assert info.value.code is ErrorCode.BUSY
            assert info.value.code.kind is ErrorKind.UNAVAILABLE  # 503, retry
    finally:
        service.close()
