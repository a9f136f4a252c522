"""The SQLite journal store: constraints, the unresolved index, integrity, several processes."""

import multiprocessing
from pathlib import Path

import apsw
import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.journal_api import AttemptRecord, RequestRecord, TaskRecord

from tests.taskcore.store.support import attempt_record, request_record, task_record


def _task(task_id="t-1", state="pending", subject_seq=1) -> TaskRecord:
    return task_record(task_id, state=state, subject_seq=subject_seq)


def _attempt(attempt_id="a-1", fence=1) -> AttemptRecord:
    return attempt_record(attempt_id, fence=fence)


def _request(request_id="r-1") -> RequestRecord:
    return request_record(request_id)


@pytest.fixture
def storage(tmp_path: Path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def test_one_attempt_per_task_and_fence(storage):
    with storage.write() as tx:
        tx.journal.insert_task(_task())
        tx.journal.insert_attempt(_attempt())
        with pytest.raises(TaskError) as info:
            tx.journal.insert_attempt(_attempt("a-2", fence=1))
        assert info.value.code is ErrorCode.CONFLICT


def test_a_request_id_is_bound_once_per_owner_and_agent(storage):
    with storage.write() as tx:
        tx.journal.insert_request(_request())
        with pytest.raises(TaskError) as info:
            tx.journal.insert_request(_request())
        assert info.value.code is ErrorCode.IDEMPOTENCY_CONFLICT


def test_task_insert_is_idempotent_by_id(storage):
    with storage.write() as tx:
        assert tx.journal.insert_task(_task())
        assert not tx.journal.insert_task(_task())


def test_unknown_states_are_refused_by_the_schema(storage):
    with pytest.raises(apsw.ConstraintError), storage.write() as tx:
        tx.journal.insert_task(_task(state="running"))


@pytest.mark.backend_only("sqlite", reason="SQLite query plans (EXPLAIN QUERY PLAN)")
def test_prior_subject_lookup_uses_the_partial_unresolved_index(storage):
    with storage.write() as tx:
        tx.journal.insert_task(_task("t-old", state="claimed", subject_seq=1))
        tx.journal.insert_task(_task("t-new", state="pending", subject_seq=2))
        found = tx.journal.unresolved_prior_task(
            repository_id="r",
            change_id="c",
            profile_id="p",
            step_id="s",
            before_subject_seq=2,
            scan_limit=4096,
        )
        assert found == "t-old"
    with storage.read() as tx:
        plan = tx.conn.execute(  # type: ignore[attr-defined]
            "EXPLAIN QUERY PLAN SELECT task_id FROM journal_task "
            "WHERE repository_id = 'r' AND change_id = 'c' AND profile_id = 'p' "
            "AND step_id = 's' AND subject_seq < 2 AND state IN ('claimed', 'cancelled') "
            "ORDER BY subject_seq DESC LIMIT 1"
        ).fetchall()
    assert "journal_task_unresolved" in " ".join(str(row) for row in plan)


def test_a_healthy_journal_passes_the_full_integrity_check(storage):
    with storage.read() as tx:
        assert tx.journal.integrity_errors() == ()


def _writer(data_dir: str, worker: int, count: int) -> None:
    s = open_storage(data_dir)
    for i in range(count):
        with s.write() as tx:
            tx.journal.insert_task(_task(f"t-{worker}-{i}"))
    s.close()


def test_several_processes_open_and_write_the_same_data_dir(tmp_path: Path):
    data_dir = tmp_path / "data"
    open_storage(data_dir, create=True).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(data_dir), w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    s = open_storage(data_dir)
    with s.read() as tx:
        assert tx.journal.count_tasks() == 100
        assert tx.journal.integrity_errors() == ()
    s.close()
