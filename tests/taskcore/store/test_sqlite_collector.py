from __future__ import annotations

import apsw
import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage
from taskcore.store.collector_api import CollectorProfileRecord, ReceiptRecord, TransferRecord


@pytest.fixture
def storage(tmp_path):
    s = open_storage(tmp_path / "data", create=True)
    yield s
    s.close()


def profile(pid="cp-1", digest="a" * 64, at=1, step="tests") -> CollectorProfileRecord:
    return CollectorProfileRecord(
        profile_id=pid,
        digest=digest,
        kind="command",
        repository_id="acme",
        workflow_profile_id="default",
        step_id=step,
        registration_id="reg",
        registration_epoch=1,
        body=b"{}",
        installed_at_ms=at,
    )


def transfer(attempt="att-1", upload="up-1", digest="d" * 64) -> TransferRecord:
    return TransferRecord(
        transfer_digest=digest,
        upload_request_id=upload,
        owner_id="w",
        agent_id="tok",
        grant_generation=5,
        repository_id="acme",
        workflow_profile_id="default",
        subject_seq=1,
        task_id="t",
        task_digest="a" * 64,
        attempt_id=attempt,
        attempt_digest="b" * 64,
        execution_operation_id="op",
        fence=1,
        registration_id="reg",
        registration_epoch=1,
        verification_key_id="k",
        collector_profile_id="cp-1",
        collector_profile_digest="a" * 64,
        kind="command",
        outcome="passed",
        passing=True,
        length=7,
        view=b'{"ok":1}',
        retained_at_ms=3,
    )


@pytest.mark.backend_only(
    "sqlite",
    reason="on PostgreSQL the audience belongs to the database every replica shares, not to a data dir",
)
def test_the_audience_is_stable_per_data_dir_and_distinct_between_them(tmp_path):
    a = open_storage(tmp_path / "a", create=True)
    b = open_storage(tmp_path / "b", create=True)
    with a.read() as tx:
        first = tx.collector.audience()
    with a.write() as tx:
        assert tx.collector.audience() == first
    with b.read() as tx:
        assert tx.collector.audience() != first
    a.close()
    b.close()


def test_a_new_profile_supersedes_the_current_one_of_its_scope(storage):
    with storage.write() as tx:
        tx.collector.insert_profile(profile())
        tx.collector.insert_profile(profile("cp-2", "b" * 64, at=2))
        tx.collector.insert_profile(profile("cp-3", "c" * 64, at=3, step="lint"))
    with storage.read() as tx:
        assert tx.collector.current_profile("acme", "default", "tests").profile_id == "cp-2"
        assert tx.collector.get_profile("cp-1").superseded_at_ms == 2
        assert tx.collector.current_profile("acme", "default", "lint").profile_id == "cp-3"
        assert [p.profile_id for p in tx.collector.profiles("acme")] == ["cp-1", "cp-2", "cp-3"]


def test_profiles_are_immutable(storage):
    with storage.write() as tx:
        tx.collector.insert_profile(profile())
    with pytest.raises(TaskError) as err, storage.write() as tx:
        tx.collector.insert_profile(profile(digest="e" * 64))
    assert err.value.code is ErrorCode.ALREADY_EXISTS
    with storage.read() as tx:
        assert tx.collector.get_profile("cp-1").digest == "a" * 64


def test_transfers_are_found_by_attempt_and_by_upload_request(storage):
    with storage.write() as tx:
        tx.collector.insert_profile(profile())
        tx.collector.insert_transfer(transfer(), b"ATCT...")
    with storage.read() as tx:
        assert tx.collector.transfer_of_attempt("att-1") == transfer()
        assert tx.collector.transfer_by_upload("w", "tok", "up-1") == transfer()
        assert tx.collector.transfer_by_upload("w", "other", "up-1") is None
        assert tx.collector.transfers_of_subject(1) == (transfer(),)


def test_one_transfer_per_attempt(storage):
    with storage.write() as tx:
        tx.collector.insert_profile(profile())
        tx.collector.insert_transfer(transfer(), b"ATCT...")
    with pytest.raises(apsw.ConstraintError), storage.write() as tx:
        tx.collector.insert_transfer(transfer(upload="up-2", digest="e" * 64), b"ATCT...")


def test_receipts_are_recorded_once_and_the_newest_is_returned(storage):
    first = ReceiptRecord(
        receipt_digest="1" * 64,
        subject_seq=1,
        repository_id="acme",
        workflow_profile_id="default",
        change_id="c",
        revision="f" * 64,
        body=b"{}",
        created_at_ms=1,
    )
    second = ReceiptRecord(
        receipt_digest="2" * 64,
        subject_seq=1,
        repository_id="acme",
        workflow_profile_id="default",
        change_id="c",
        revision="f" * 64,
        body=b"{}",
        created_at_ms=2,
    )
    with storage.write() as tx:
        assert tx.collector.insert_receipt(first)
        assert not tx.collector.insert_receipt(first)
        assert tx.collector.insert_receipt(second)
    with storage.read() as tx:
        assert tx.collector.receipt_of_subject(1) == second
        assert tx.collector.receipt_of_subject(2) is None


def test_envelope_bytes_are_read_only_within_the_bound(storage):
    with storage.write() as tx:
        tx.collector.insert_profile(profile())
        tx.collector.insert_transfer(transfer(), b"ATCT...")
    with storage.read() as tx:
        assert tx.collector.envelope("d" * 64, max_bytes=7) == b"ATCT..."
        with pytest.raises(TaskError) as err:
            tx.collector.envelope("d" * 64, max_bytes=6)
        assert err.value.code is ErrorCode.INTEGRITY_FAILURE
        with pytest.raises(TaskError) as missing:
            tx.collector.envelope("0" * 64, max_bytes=7)
        assert missing.value.code is ErrorCode.NOT_FOUND


def test_a_record_whose_length_is_not_its_bytes_is_refused(storage):
    with storage.write() as tx:
        tx.collector.insert_profile(profile())
    with pytest.raises(TaskError), storage.write() as tx:
        tx.collector.insert_transfer(transfer(), b"other length")
