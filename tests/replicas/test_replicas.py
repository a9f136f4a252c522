"""Replicas: several ``agent-task serve`` processes on one PostgreSQL database.

PostgreSQL only, by nature: SQLite has no second process serving the same journal over the
network. Each replica is the real console script with its own data dir and ``--database``
pointing at this session's test database (tests/conftest.py ``postgres_url``).

* 3 replicas, 24 HTTP clients spread over them, 3,000 tasks drained: no task claimed twice,
  each DONE exactly once, audit rows = calls;
* SIGKILL a replica mid-run: every acknowledged mutation is there afterwards, the leases it
  handed out expire and the other replicas' clients finish those tasks (at a higher fence);
* a token revoked through one replica is refused by another at its next request (no cache);
* replicas started together on an empty database migrate it once and report the backend and
  schema on ``/v1/hub/health``; a replica refuses a database migrated by a newer release.
"""

from __future__ import annotations

import itertools
import json
import signal
import threading
from collections import Counter
from pathlib import Path

import httpx
import psycopg
import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.clock import SystemClock
from taskcore.store import open_storage

from tests.adversarial.served import Served

WORKSPACE = "w"
_UNFINISHED = "SELECT count(*) FROM queue_task WHERE status <> 'DONE'"


def _start(tmp_path: Path, url: str, n: int) -> list[Served]:
    return [Served(tmp_path / f"replica-{i}", "--database", url) for i in range(n)]


def _stop(replicas: list[Served]) -> None:
    for r in replicas:
        r.stop()


def _token(url: str, name: str, tier: Tier = Tier.MEMBER) -> str:
    storage = open_storage("/nonexistent-data-dir", database=url)
    try:
        issued = issue_token(
            storage, SystemClock(), workspace=WORKSPACE, tier=tier, autonomy=3, name=name
        )
    finally:
        storage.close()
    return issued.token


def _post(client: httpx.Client, verb: str, body: object, token: str) -> httpx.Response:
    return client.post(
        f"/v/{verb}",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )


def _rows(url: str, sql: str, args: tuple = ()) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def _audit_calls(url: str) -> int:
    storage = open_storage("/nonexistent-data-dir", database=url)
    try:
        with storage.read() as tx:
            return tx.audit.count(workspace=WORKSPACE)
    finally:
        storage.close()


@pytest.mark.slow
def test_three_replicas_and_24_clients_drain_3000_tasks_exactly_once(tmp_path, postgres_url):
    replicas = _start(tmp_path, postgres_url, 3)
    tasks, clients_n = 3000, 24
    token = _token(postgres_url, "drainer")
    created: list[list[str]] = [[] for _ in range(clients_n)]
    done: list[list[tuple[str, int]]] = [[] for _ in range(clients_n)]
    calls = [0] * clients_n
    failures: list[str] = []

    def create(i: int) -> None:
        with httpx.Client(base_url=replicas[i % 3].url, timeout=60) as client:
            for _ in range(tasks // clients_n):
                r = _post(client, "agenttask.create", {"verb": "agent.run"}, token)
                calls[i] += 1
                if r.status_code != 200:
                    failures.append(f"create {r.status_code} {r.text}")
                    return
                created[i].append(r.json()["taskId"])

    def drain(i: int) -> None:
        with httpx.Client(base_url=replicas[i % 3].url, timeout=60) as client:
            while True:
                r = _post(client, "agenttask.claimNext", {}, token)
                calls[i] += 1
                if r.status_code != 200:
                    failures.append(f"claim {r.status_code} {r.text}")
                    return
                claim = r.json()
                if not claim["claimed"]:
                    return
                task_id, fence = claim["task"]["taskId"], claim["lease"]["fence"]
                body = {"taskId": task_id, "status": "DONE", "fence": fence}
                r = _post(client, "agenttask.checkpoint", body, token)
                calls[i] += 1
                if r.status_code != 200:
                    failures.append(f"checkpoint {r.status_code} {r.text}")
                    return
                done[i].append((task_id, fence))

    try:
        for phase in (create, drain):
            threads = [threading.Thread(target=phase, args=(i,)) for i in range(clients_n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert failures == []
        for r in replicas:  # every replica answered some of it
            assert r.proc.poll() is None
    finally:
        _stop(replicas)
    ids = {task_id for chunk in created for task_id in chunk}
    assert len(ids) == tasks
    finished = Counter(task_id for chunk in done for task_id, _ in chunk)
    assert set(finished) == ids
    assert max(finished.values()) == 1  # each task DONE exactly once
    assert {fence for chunk in done for _, fence in chunk} == {1}  # never claimed twice
    states = dict(_rows(postgres_url, "SELECT status, count(*) FROM queue_task GROUP BY status"))
    assert states == {"DONE": tasks}
    # Every call (creates, claims, checkpoints, the final empty claims) is one audit row.
    assert _audit_calls(postgres_url) == sum(calls)


@pytest.mark.slow
def test_a_replica_killed_mid_run_loses_no_acknowledged_mutation_and_its_leases_move_on(
    tmp_path, postgres_url
):
    replicas = _start(tmp_path, postgres_url, 3)
    token = _token(postgres_url, "worker")
    tasks = 300
    acked_created: list[str] = []
    acked_done: dict[str, int] = {}
    lock = threading.Lock()
    held: list[tuple[str, int]] = []
    unanswered: set[str] = set()  # checkpoints whose replica died before answering
    try:
        with httpx.Client(base_url=replicas[0].url, timeout=60) as client:
            for _ in range(tasks):
                r = _post(client, "agenttask.create", {"verb": "agent.run"}, token)
                assert r.status_code == 200, r.text
                acked_created.append(r.json()["taskId"])
            # Work the doomed replica hands out and never sees finished: 2 s leases.
            for _ in range(5):
                r = _post(client, "agenttask.claimNext", {"leaseMs": 2000}, token)
                claim = r.json()
                held.append((claim["task"]["taskId"], claim["lease"]["fence"]))
        killed = threading.Event()
        started = threading.Barrier(13)

        def work(i: int) -> None:
            order = itertools.cycle([replicas[i % 3], replicas[(i + 1) % 3], replicas[(i + 2) % 3]])
            target = next(order)
            client = httpx.Client(base_url=target.url, timeout=30)
            pending: str | None = None
            started.wait()
            try:
                while True:
                    try:
                        r = _post(client, "agenttask.claimNext", {"leaseMs": 2000}, token)
                        claim = r.json()
                        if not claim["claimed"]:
                            # Done when no task is left to finish (a DONE whose answer died
                            # with the replica is never acknowledged, so count rows, not acks).
                            if _rows(postgres_url, _UNFINISHED)[0][0] == 0:
                                return
                            threading.Event().wait(0.2)  # leases of the dead still running
                            continue
                        task_id, fence = claim["task"]["taskId"], claim["lease"]["fence"]
                        body = {"taskId": task_id, "status": "DONE", "fence": fence}
                        pending = task_id
                        r = _post(client, "agenttask.checkpoint", body, token)
                        pending = None
                        if r.status_code == 200:
                            with lock:
                                assert task_id not in acked_done
                                acked_done[task_id] = fence
                    except httpx.TransportError:
                        # The replica died under this client: go to the next one.
                        assert killed.is_set()
                        if pending is not None:  # this DONE may or may not have committed
                            with lock:
                                unanswered.add(pending)
                            pending = None
                        client.close()
                        target = next(order)
                        while target.proc.poll() is not None:
                            target = next(order)
                        client = httpx.Client(base_url=target.url, timeout=30)
            finally:
                client.close()

        errors: list[BaseException] = []

        def guarded(i: int) -> None:
            try:
                work(i)
            except BaseException as exc:  # a worker's failure fails the test, not just its thread
                errors.append(exc)

        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        started.wait()
        while True:  # kill replica 0 once about a third of the tasks are done
            with lock:
                if len(acked_done) >= tasks // 3:
                    break
            threading.Event().wait(0.05)
        killed.set()
        replicas[0].proc.send_signal(signal.SIGKILL)
        replicas[0].proc.wait(30)
        for t in threads:
            t.join(300)
            assert not t.is_alive()
        assert errors == []
    finally:
        _stop(replicas)
    rows = dict(
        (task_id, (status, fence))
        for task_id, status, fence in _rows(
            postgres_url, "SELECT task_id, status, fence FROM queue_task"
        )
    )
    # Every acknowledged create and every acknowledged DONE is there, as acknowledged.
    assert set(acked_created) == set(rows)
    for task_id, fence in acked_done.items():
        assert rows[task_id] == ("DONE", fence)
    # Every task is DONE, and every DONE was acknowledged unless its replica died answering.
    assert {status for status, _ in rows.values()} == {"DONE"}
    assert set(rows) <= set(acked_done) | unanswered
    assert len(unanswered) <= 12
    # The leases the dead replica handed out expired and others took those tasks over.
    for task_id, fence in held:
        assert rows[task_id][0] == "DONE"
        assert rows[task_id][1] > fence


def test_a_token_revoked_through_one_replica_is_refused_by_another_at_once(tmp_path, postgres_url):
    a, b = _start(tmp_path, postgres_url, 2)
    try:
        admin = _token(postgres_url, "operator", Tier.ADMIN)
        member = _token(postgres_url, "soon-revoked")
        with httpx.Client(base_url=b.url, timeout=30) as client:
            assert (
                _post(client, "agenttask.create", {"verb": "agent.run"}, member).status_code == 200
            )
        token_id = _rows(
            postgres_url, "SELECT token_id FROM token WHERE name = %s", ("soon-revoked",)
        )[0][0]
        revoked = a.post("/v/admin.token.revoke", {"tokenId": token_id}, admin)
        assert revoked.status_code == 200, revoked.text
        with httpx.Client(base_url=b.url, timeout=30) as client:
            refused = _post(client, "agenttask.create", {"verb": "agent.run"}, member)
        assert refused.status_code == 401
        assert refused.json()["code"] == "TOKEN_REVOKED"
    finally:
        _stop([a, b])


def test_replicas_started_together_migrate_once_and_report_backend_and_schema(
    tmp_path, postgres_url
):
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # an empty database
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    replicas: list[Served] = []
    errors: list[BaseException] = []

    def start(i: int) -> None:
        try:
            replicas.append(Served(tmp_path / f"r{i}", "--database", postgres_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        from taskcore.store.postgres.migrations import COMPONENTS

        latest = {c.name: c.latest for c in COMPONENTS}
        assert dict(_rows(postgres_url, "SELECT component, version FROM schema_versions")) == latest
        for r in replicas:
            health = r.client.get("/v1/hub/health").json()
            assert health == {"status": "ok", "backend": "postgresql", "schema": latest}
        # Exactly one of them found no token and wrote the first admin token.
        assert sum((r.data_dir / "admin.token").exists() for r in replicas) == 1
    finally:
        _stop(replicas)


def test_a_replica_refuses_a_database_migrated_by_a_newer_release(tmp_path, postgres_url):
    first = Served(tmp_path / "r0", "--database", postgres_url)
    first.stop()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_versions SET version = version + 1 WHERE component = 'queue'")
        try:
            refused = Served(tmp_path / "r1", "--database", postgres_url, expect_start=False)
        finally:  # the session's later tests share this database
            conn.execute(
                "UPDATE schema_versions SET version = version - 1 WHERE component = 'queue'"
            )
    assert refused.proc.returncode not in (None, 0)
    assert "newer than this release" in refused.log()
    assert "STORAGE_UNAVAILABLE" in refused.log()
