"""The SQLite audit store: appends, and the retention sweep's prune."""

from pathlib import Path

import pytest
from taskcore.store import open_storage
from taskcore.store.audit_api import AuditEvent


@pytest.fixture
def storage(tmp_path: Path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def _append(storage, *times: int) -> None:
    with storage.write() as tx:
        for at in times:
            tx.audit.append(
                AuditEvent(
                    at_ms=at,
                    actor="a",
                    workspace="w",
                    operation="op",
                    input_digest="d",
                    outcome="OK",
                )
            )


def _times(storage) -> list[int]:
    with storage.read() as tx:
        return [at for (at,) in tx.conn.execute("SELECT at_ms FROM audit_event ORDER BY seq")]


def test_prune_deletes_the_oldest_rows_before_the_cutoff_in_batches(storage):
    _append(storage, 1, 2, 3, 4, 5, 10, 11)
    with storage.write() as tx:
        assert tx.audit.prune(6, limit=3) == 3
    assert _times(storage) == [4, 5, 10, 11]
    with storage.write() as tx:
        assert tx.audit.prune(6, limit=3) == 2
        assert tx.audit.prune(6, limit=3) == 0
    assert _times(storage) == [10, 11]


def test_prune_never_deletes_a_row_at_or_after_the_cutoff(storage):
    # The clock stepped back after 9: the older rows written after it wait for it.
    _append(storage, 1, 9, 2, 3)
    with storage.write() as tx:
        assert tx.audit.prune(5, limit=100) == 1
    assert _times(storage) == [9, 2, 3]
    with storage.write() as tx:
        assert tx.audit.prune(10, limit=100) == 3
    assert _times(storage) == []


def test_the_audit_table_keeps_no_index_on_time(storage):
    with storage.read() as tx:
        if storage.backend == "postgresql":
            sql = "SELECT indexname FROM pg_indexes WHERE tablename = 'audit_event'"
        else:
            sql = "SELECT name FROM sqlite_master WHERE type = 'index'"
        names = {n for (n,) in tx.conn.execute(sql)}
    assert "audit_event_at" not in names
    assert {"audit_event_workspace", "audit_event_subject"} <= names
