"""store/postgres/stores.py: SKIP LOCKED claims and the phase-index lock, on bare connections.

The writer lock already serializes the service's transactions; these run the stores on two
connections without it, to show the statements are safe on their own.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors as pg_errors
from taskcore.store.postgres.connection import PgConnection
from taskcore.store.postgres.stores import PgQueueStore, advisory_key
from taskcore.store.queue_api import TaskRecord


def _task(task_id: str) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        workspace="w",
        verb="agent.run",
        payload_json=None,
        status="QUEUED",
        priority=0,
        autonomy_ceiling=1,
        depth=0,
        parent_task_id=None,
        run_id=None,
        matter_id=None,
        matter_step_id=None,
        created_by="c",
        created_at_ms=100,
        updated_at_ms=100,
    )


@pytest.fixture
def two(storage, postgres_url):
    with storage.write() as tx:
        for n in range(3):
            tx.queue.insert_task(_task(f"t{n}"))
    conns = [psycopg.connect(postgres_url, autocommit=True) for _ in range(2)]
    for c in conns:
        c.execute("BEGIN")
    yield [PgConnection(c) for c in conns]
    for c in conns:
        c.execute("ROLLBACK")
        c.close()


def test_two_claimers_skip_each_others_locked_rows(two):
    a, b = (PgQueueStore(c) for c in two)  # type: ignore[arg-type]
    first = a.best_claimable("w", max_autonomy=1, autonomy=1, verb=None, now_ms=200)
    second = b.best_claimable("w", max_autonomy=1, autonomy=1, verb=None, now_ms=200)
    assert first is not None
    assert second is not None
    assert (first.task_id, second.task_id) == ("t0", "t1")  # claim order, t0 skipped by b
    assert b.best_claimable("w", max_autonomy=1, autonomy=1, verb="other", now_ms=200) is None


def test_the_phase_index_of_a_task_is_read_by_one_writer_at_a_time(two):
    a, b = (PgQueueStore(c) for c in two)  # type: ignore[arg-type]
    assert a.next_phase_index("w", "t0") == 0
    two[1].raw.execute("SET LOCAL lock_timeout = 100")
    with pytest.raises(pg_errors.LockNotAvailable):
        b.next_phase_index("w", "t0")


def test_advisory_keys_are_signed_64_bit_and_spaced():
    keys = {advisory_key(0x6167746B, f"w\x1ft{n}") for n in range(1000)}
    assert len(keys) == 1000
    assert all(-(2**63) <= k < 2**63 for k in keys)
