"""The SQLite authority store: constraints that keep the authority's records honest."""

from pathlib import Path

import apsw
import pytest
from taskcore.contract import ExecutorEnrollment, ExecutorRevocation
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.authority_api import (
    PolicyRecord,
    ProfileRecord,
    RequirementRecord,
)

from tests.taskcore.store.support import HEX, seed_route, subject


@pytest.fixture
def storage(tmp_path: Path):
    s = open_storage(tmp_path / "data", create=True)
    with s.write() as tx:
        seed_route(tx)
    yield s
    s.close()


def test_a_change_version_names_one_subject(storage):
    with storage.write() as tx:
        seq = tx.authority.insert_subject(subject(1))
        assert tx.authority.latest_subject("r", "p", "c").subject_seq == seq
        with pytest.raises(apsw.ConstraintError):
            tx.authority.insert_subject(subject(1))


def test_requirements_are_content_addressed_and_installed_once(storage):
    with storage.write() as tx:
        again = RequirementRecord(
            repository_id="r",
            requirement_digest=HEX,
            requirement_id="ci",
            body=b"{}",
            plan_digest=HEX,
            installed_at_ms=5,
        )
        assert tx.authority.insert_requirement(again) is False


def test_a_revocation_names_an_existing_enrollment_epoch(storage):
    revocation = ExecutorRevocation(
        version=1,
        registration_id="reg",
        executor_id="ex",
        registration_epoch=1,
        verification_key_id="k",
        revoked_at_ms=0,
        reason="x",
    )
    with pytest.raises(TaskError) as info, storage.write() as tx:
        tx.authority.insert_revocation(revocation)
    assert info.value.code is ErrorCode.NOT_FOUND


def test_enrollment_epochs_are_immutable_rows(storage):
    enrollment = ExecutorEnrollment(
        version=1,
        registration_id="reg",
        executor_id="ex",
        repository_id="r",
        step_id="s",
        registration_epoch=1,
        verification_key_id="k",
        public_key=HEX,
        enrolled_at_ms=0,
    )
    with storage.write() as tx:
        tx.authority.insert_enrollment(enrollment)
        with pytest.raises(TaskError) as info:
            tx.authority.insert_enrollment(enrollment)
        assert info.value.code is ErrorCode.ALREADY_EXISTS
        assert tx.authority.enrollments("reg") == (enrollment,)


def test_policy_epochs_move_the_repository_current_epoch(storage):
    with storage.write() as tx:
        tx.authority.insert_policy(
            PolicyRecord(repository_id="r", epoch=2, digest="f" * 64, body=b"{}", recorded_at_ms=1)
        )
        repo = tx.authority.get_repository("r")
        assert (repo.policy_epoch, repo.policy_digest) == (2, "f" * 64)
        assert tx.authority.get_policy("r", 1).digest == HEX


# -- memoised rows ---------------------------------------------------------------------------


def _statements(storage, fn) -> list[str]:
    """The SQL statements ``fn(tx)`` runs inside one write transaction."""
    seen: list[str] = []
    with storage.write() as tx:
        tx.conn.exec_trace = lambda _c, sql, _b: seen.append(sql) or True
        try:
            fn(tx)
        finally:
            tx.conn.exec_trace = None
    return seen


@pytest.mark.backend_only(
    "sqlite",
    reason="counts statements with apsw's exec trace (the PostgreSQL store inherits the same memo)",
)
def test_rows_read_twice_in_a_transaction_are_read_once(storage):
    def twice(tx) -> None:
        for _ in range(2):
            assert tx.authority.get_repository("r").workspace == "w"
            assert tx.authority.get_profile("r", "p").target == "main"
            assert tx.authority.get_repository("nope") is None

    selects = [s for s in _statements(storage, twice) if s.startswith("SELECT")]
    assert len(selects) == 3


def test_a_write_in_the_transaction_is_seen_by_the_next_read(storage):
    with storage.write() as tx:
        assert tx.authority.get_profile("r", "p").generation == 1
        assert tx.authority.latest_subject("r", "p", "c") is None
        tx.authority.put_profile(
            ProfileRecord(
                repository_id="r",
                profile_id="p",
                target="next",
                requirement_digest=HEX,
                generation=2,
                registered_at_ms=1,
            )
        )
        seq = tx.authority.insert_subject(subject(1))
        assert tx.authority.get_profile("r", "p").generation == 2
        assert tx.authority.latest_subject("r", "p", "c").subject_seq == seq
        tx.authority.supersede_subject(seq, 9)
        assert tx.authority.get_subject(seq).superseded_at_ms == 9
    with storage.read() as tx:  # a new transaction reads the committed rows again
        assert tx.authority.get_profile("r", "p").target == "next"


def test_a_rolled_back_transaction_leaves_no_memo_behind(storage):
    def fails(tx) -> None:
        tx.authority.put_profile(
            ProfileRecord(
                repository_id="r",
                profile_id="p",
                target="never",
                requirement_digest=HEX,
                generation=7,
                registered_at_ms=1,
            )
        )
        assert tx.authority.get_profile("r", "p").target == "never"
        raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        _statements(storage, fails)
    with storage.write() as tx:
        assert tx.authority.get_profile("r", "p").target == "main"


@pytest.mark.backend_only(
    "sqlite", reason="committed immutable rows are shared by the SQLite storage only"
)
def test_committed_requirements_and_policies_are_read_once_per_storage(storage):
    def read(tx) -> None:
        assert tx.authority.get_requirement("r", HEX).requirement_id == "ci"
        assert tx.authority.get_policy("r", 1).digest == HEX

    first = _statements(storage, read)
    assert sum(s.startswith("SELECT") for s in first) == 2
    assert not any(s.startswith("SELECT") for s in _statements(storage, read))


def test_an_immutable_row_of_a_failed_call_is_not_shared(storage):
    other = "a" * 64
    record = RequirementRecord(
        repository_id="r",
        requirement_digest=other,
        requirement_id="gone",
        body=b"{}",
        plan_digest=other,
        installed_at_ms=0,
    )

    def fails(tx) -> None:
        assert tx.authority.insert_requirement(record) is True
        assert tx.authority.get_requirement("r", other) is not None
        raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        _statements(storage, fails)
    with storage.write() as tx:
        assert tx.authority.get_requirement("r", other) is None
    with storage.read() as tx:
        assert tx.authority.get_requirement("r", other) is None
