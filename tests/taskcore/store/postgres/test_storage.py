"""store/postgres/storage.py: one writer across connections, BUSY after the timeout, snapshots."""

from __future__ import annotations

import threading

import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.postgres.storage import PostgresStorage, redact, split_url
from taskcore.store.tokens_api import TokenRecord


def _token(n: int) -> TokenRecord:
    return TokenRecord(
        token_id=f"t{n}",
        name="n",
        workspace="w",
        tier="agent",
        autonomy=1,
        secret_hash="0" * 64,
        created_at_ms=n,
        revoked_at_ms=None,
    )


def test_urls_keep_our_pool_size_and_hide_passwords():
    assert split_url("postgres://h/db?pool_size=2") == ("postgres://h/db", 2)
    with pytest.raises(TaskError):
        split_url("postgresql://h/db?pool_size=0")
    with pytest.raises(TaskError):
        split_url("mysql://h/db")
    assert redact("postgresql://u:pw@h/db?x=1") == "postgresql://u:***@h/db"


def test_a_second_writer_waits_for_the_first_then_gets_busy(storage, postgres_url, tmp_path):
    other = open_storage(tmp_path / "other", database=postgres_url, busy_timeout_ms=100)
    try:
        with storage.write() as tx:
            tx.tokens.insert(_token(1))
            with pytest.raises(TaskError) as info, other.write() as tx2:
                tx2.tokens.insert(_token(2))
            assert info.value.code is ErrorCode.BUSY
        with other.write() as tx2:  # the lock is free again once the first commits
            assert [t.token_id for t in tx2.tokens.list()] == ["t1"]
    finally:
        other.close()


def test_writers_of_two_storages_take_turns_and_see_each_others_commits(
    storage, postgres_url, tmp_path
):
    other = open_storage(tmp_path / "other", database=postgres_url)
    counts: list[int] = []

    def bump(s: PostgresStorage, n: int) -> None:
        for i in range(20):
            with s.write() as tx:
                counts.append(len(tx.tokens.list()))
                tx.tokens.insert(_token(n * 100 + i))

    try:
        threads = [
            threading.Thread(target=bump, args=(storage, 1)),
            threading.Thread(target=bump, args=(other, 2)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        other.close()
    # Read-then-insert under the writer lock: every transaction saw all earlier commits.
    assert sorted(counts) == list(range(40))


def _nested(storage) -> None:
    with storage.write() as tx:
        tx.tokens.insert(_token(1))
        with storage.read():
            pass


def test_nested_transactions_are_refused_and_rolled_back(storage):
    with pytest.raises(TaskError) as info:
        _nested(storage)
    assert info.value.code is ErrorCode.INTERNAL
    with storage.read() as tx:
        assert tx.tokens.list() == ()


def test_an_integer_past_int64_is_out_of_bounds_and_nothing_is_written(storage):
    with pytest.raises(TaskError) as info, storage.write() as tx:
        tx.tokens.insert(_token(2**63))
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS


def test_health_facts(storage):
    storage.ping()
    assert storage.backend == "postgresql"
    assert storage.schema()["queue"] >= 1


def test_an_unreachable_server_is_storage_unavailable(tmp_path):
    with pytest.raises(TaskError) as info:
        PostgresStorage("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert info.value.code is ErrorCode.STORAGE_UNAVAILABLE


@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_service_cycle_with_and_without_pipelining(postgres_url, tmp_path, mode):
    """``?pipeline=on|off`` (ours, not libpq's): the same calls, the same audit rows."""
    from taskcore import Service
    from taskcore.actors import Tier
    from taskcore.auth import issue_token
    from taskcore.clock import SystemClock
    from taskcore.service import ServiceConfig

    storage = open_storage(tmp_path / "d", database=f"{postgres_url}?pipeline={mode}")
    assert storage.pipelined is (mode == "on")  # type: ignore[attr-defined]
    service = Service(storage, config=ServiceConfig(data_dir=tmp_path / "data"))
    try:
        bearer = issue_token(
            storage, SystemClock(), workspace="w", tier=Tier.MEMBER, autonomy=3, name="m"
        ).token
        created = service.call(bearer, "agenttask.create", {"verb": "agent.run"}).json()
        claim = service.call(bearer, "agenttask.claimNext", {}).json()
        assert claim["task"]["taskId"] == created["taskId"]
        body = {"taskId": created["taskId"], "status": "DONE", "fence": claim["lease"]["fence"]}
        service.call(bearer, "agenttask.checkpoint", body)
        with pytest.raises(TaskError):
            service.call(bearer, "agenttask.checkpoint", body)  # refused: audited on its own
        with storage.read() as tx:
            assert tx.audit.count(workspace="w") == 4
    finally:
        service.close()
