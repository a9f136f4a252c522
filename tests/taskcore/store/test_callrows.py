"""One read for a workflow call's rows: the same records as the stores' own lookups."""

from pathlib import Path

import attrs
import pytest
from taskcore.store import open_storage
from taskcore.store.authority_api import SubjectRecord
from taskcore.store.callrows import CallKeys
from taskcore.store.journal_api import TaskRecord
from taskcore.store.tokens_api import TokenRecord

from tests.taskcore.store.support import (
    HEX,
    attempt_record,
    request_record,
    seed_route,
    subject,
    task_record,
)


def _subject(version: int, change: str = "c") -> SubjectRecord:
    return subject(version, change, context=b"ctx", recorded_at_ms=3)


def _task(task_id: str, seq: int, attempt: str | None) -> TaskRecord:
    return task_record(
        task_id,
        subject_seq=seq,
        state="claimed" if attempt else "pending",
        next_fence=2 if attempt else 1,
        current_attempt_id=attempt,
        created_at_ms=1,
        updated_at_ms=2,
    )


@pytest.fixture
def storage(tmp_path: Path):
    s = open_storage(tmp_path / "data", create=True)
    with s.write() as tx:
        seed_route(tx)
        old = tx.authority.insert_subject(_subject(1))
        new = tx.authority.insert_subject(_subject(2))
        tx.authority.insert_subject(_subject(1, change="other"))
        tx.journal.insert_task(_task("t-old", old, None))
        tx.journal.insert_task(_task("t-new", new, "a-1"))
        tx.journal.insert_attempt(
            attempt_record(
                task_id="t-new", lease_expires_at_ms=99, created_at_ms=1, updated_at_ms=1
            )
        )
        tx.journal.insert_request(
            request_record(
                "q-1", task_id="t-new", attempt_id="a-1", outcome=b'{"ok":1}', recorded_at_ms=1
            )
        )
        tx.tokens.insert(
            TokenRecord(
                token_id="tok",
                name="n",
                workspace="w",
                tier="agent",
                autonomy=1,
                secret_hash=HEX,
                created_at_ms=0,
                revoked_at_ms=5,
            )
        )
    yield s
    s.close()


BASE = CallKeys(
    repository_id="r",
    profile_id="p",
    token_id="tok",
    owner_id="o",
    agent_id="g",
    request_id="q-1",
    task_id="t-new",
    attempt_id="a-1",
)

CASES = {
    "everything found": BASE,
    "no attempt asked": attrs.evolve(BASE, attempt_id=None),
    "older subject's task": attrs.evolve(BASE, task_id="t-old", attempt_id=None),
    "unknown task, attempt, request, token": attrs.evolve(
        BASE, task_id="nope", attempt_id="nope", request_id="nope", token_id="nope"
    ),
    "unknown route": attrs.evolve(BASE, repository_id="x", profile_id="y"),
    "known repository, unknown profile": attrs.evolve(BASE, profile_id="y"),
    "attempt of another task": attrs.evolve(BASE, task_id="t-old"),
    "another agent's request ID": attrs.evolve(BASE, agent_id="h"),
}


def _lookups(tx, keys: CallKeys) -> tuple:
    """Every lookup a workflow call makes for ``keys``, through the stores' usual methods."""
    task = tx.journal.get_task(keys.task_id)
    subject = None if task is None else tx.authority.get_subject(task.subject_seq)
    return (
        tx.authority.get_repository(keys.repository_id),
        tx.authority.get_profile(keys.repository_id, keys.profile_id),
        tx.tokens.get(keys.token_id),
        tx.journal.get_request(keys.owner_id, keys.agent_id, keys.request_id),
        task,
        None if keys.attempt_id is None else tx.journal.get_attempt(keys.attempt_id),
        subject,
        None
        if subject is None
        else tx.authority.latest_subject_seq(
            subject.repository_id, subject.profile_id, subject.change_id
        ),
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_prefetched_rows_are_the_rows_the_stores_read(storage, case):
    keys = CASES[case]
    with storage.write() as tx:
        plain = _lookups(tx, keys)
    with storage.write() as tx:
        tx.prefetch(keys)
        assert _lookups(tx, keys) == plain
    with storage.read() as tx:
        tx.prefetch(keys)
        assert _lookups(tx, keys) == plain


def test_the_latest_subject_seq_is_the_latest_subjects(storage):
    with storage.read() as tx:
        for change in ("c", "other", "none"):
            latest = tx.authority.latest_subject("r", "p", change)
            assert tx.authority.latest_subject_seq("r", "p", change) == (
                None if latest is None else latest.subject_seq
            )


def _traced(tx, fn) -> list[str]:
    seen: list[str] = []
    tx.conn.exec_trace = lambda _c, sql, _b: seen.append(sql) or True
    try:
        fn()
    finally:
        tx.conn.exec_trace = None
    return seen


@pytest.mark.backend_only("sqlite", reason="counts statements with apsw's exec trace")
def test_after_the_prefetch_the_lookups_run_no_statement(storage):
    with storage.write() as tx:
        assert len(_traced(tx, lambda: tx.prefetch(BASE))) == 1
        assert _traced(tx, lambda: _lookups(tx, BASE)) == []


def test_a_write_through_a_store_forgets_its_prefetched_rows(storage):
    with storage.write() as tx:
        tx.prefetch(BASE)
        task = tx.journal.get_task("t-new")
        tx.journal.update_task(attrs.evolve(task, state="finished", updated_at_ms=7), before=task)
        assert tx.journal.get_task("t-new").state == "finished"
        attempt = tx.journal.get_attempt("a-1")
        tx.journal.update_attempt(attrs.evolve(attempt, state="finished"), before=attempt)
        assert tx.journal.get_attempt("a-1").state == "finished"
        tx.tokens.insert(attrs.evolve(tx.tokens.get("tok"), token_id="tok2", revoked_at_ms=None))
        assert tx.tokens.revoke("tok2", 9)
        assert tx.tokens.get("tok2").revoked_at_ms == 9
        seq = tx.authority.insert_subject(_subject(3))
        assert tx.authority.latest_subject_seq("r", "p", "c") == seq


def _finish_then_fail(storage) -> None:
    with storage.write() as tx:
        tx.prefetch(BASE)
        task = tx.journal.get_task("t-new")
        tx.journal.update_task(attrs.evolve(task, state="finished"), before=task)
        assert tx.journal.get_task("t-new").state == "finished"
        raise RuntimeError("roll back")


def test_a_failed_block_leaves_no_prefetched_rows_behind(storage):
    with pytest.raises(RuntimeError):
        _finish_then_fail(storage)
    with storage.write() as tx:
        assert tx.journal.get_task("t-new").state == "claimed"
