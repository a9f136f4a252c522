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
        assert tx.audit.prune(10, limit=100) == 2
    assert _times(storage) == [3]  # the newest event is always kept (see the next test)


def test_prune_keeps_the_newest_event_so_event_ids_are_never_handed_out_again(storage):
    _append(storage, 1, 2, 3)
    with storage.write() as tx:
        assert tx.audit.prune(100, limit=100) == 2
        assert (tx.audit.oldest_seq(), tx.audit.newest_seq()) == (3, 3)
    _append(storage, 4)
    with storage.read() as tx:
        assert [e.seq for e in tx.audit.after(0, up_to=10, limit=10)] == [3, 4]


def test_events_read_back_in_order_with_their_status_and_trace(storage):
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with storage.write() as tx:
        for workspace in ("w", "v", "w"):
            tx.audit.append(
                AuditEvent(
                    at_ms=1,
                    actor="a",
                    workspace=workspace,
                    operation="agenttask.claim",
                    input_digest="d",
                    outcome="OK",
                    subject="at_1",
                    status_before="QUEUED",
                    status_after="LEASED",
                    traceparent=traceparent,
                )
            )
    with storage.read() as tx:
        every = tx.audit.after(0, up_to=3, limit=10)
        mine = tx.audit.after(0, up_to=3, limit=10, workspace="w")
        assert [e.seq for e in every] == [1, 2, 3]
        assert [e.seq for e in mine] == [1, 3]
        assert [e.seq for e in tx.audit.after(1, up_to=2, limit=10)] == [2]
        assert (mine[0].status_before, mine[0].status_after) == ("QUEUED", "LEASED")
        assert mine[0].traceparent == traceparent
        seqs, xmin, xmax = tx.audit.settled(0, 10)
        assert seqs == (1, 2, 3)
        assert xmin <= xmax


def test_a_task_keeps_the_first_trace_recorded_for_it(storage):
    first = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    second = "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with storage.write() as tx:
        assert tx.audit.task_trace("w", "at_1") is None
        tx.audit.put_task_trace("w", "at_1", first, 5)
        tx.audit.put_task_trace("w", "at_1", second, 6)
        tx.audit.put_task_trace("v", "at_1", second, 6)
    with storage.read() as tx:
        assert tx.audit.task_trace("w", "at_1") == first
        assert tx.audit.task_trace("v", "at_1") == second
    _append(storage, 1, 2)
    with storage.write() as tx:
        tx.audit.prune(6, limit=100)  # the trace recorded at 5 goes with the old events
        assert tx.audit.task_trace("w", "at_1") is None
        assert tx.audit.task_trace("v", "at_1") == second


def test_the_audit_table_keeps_no_index_on_time(storage):
    with storage.read() as tx:
        if storage.backend == "postgresql":
            sql = "SELECT indexname FROM pg_indexes WHERE tablename = 'audit_event'"
        else:
            sql = "SELECT name FROM sqlite_master WHERE type = 'index'"
        names = {n for (n,) in tx.conn.execute(sql)}
    assert "audit_event_at" not in names
    assert {"audit_event_workspace", "audit_event_subject"} <= names
