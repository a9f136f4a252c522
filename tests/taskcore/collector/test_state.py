from __future__ import annotations

import os
import stat

import pytest
from taskcore.collector.state import CollectorState
from taskcore.durable import durable_write
from taskcore.errors import ErrorCode, TaskError
from taskcore.signing import key_id_for, public_key_hex


def test_a_new_state_directory_is_owner_private(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    assert stat.S_IMODE(os.stat(state.root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(state.root / "attempts").st_mode) == 0o700


def test_a_missing_state_directory_is_not_created_without_asking(tmp_path):
    with pytest.raises(TaskError) as err:
        CollectorState.open(tmp_path / "c")
    assert err.value.code is ErrorCode.NOT_FOUND
    assert not (tmp_path / "c").exists()


def test_a_symlinked_state_directory_is_refused(tmp_path):
    real = tmp_path / "real"
    CollectorState.open(real, create=True)
    os.symlink(real, tmp_path / "link")
    with pytest.raises(TaskError) as err:
        CollectorState.open(tmp_path / "link")
    assert err.value.code is ErrorCode.INVALID_PATH


def test_a_symlinked_parent_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "parent")
    with pytest.raises(TaskError) as err:
        CollectorState.open(tmp_path / "parent" / "c", create=True)
    assert err.value.code is ErrorCode.INVALID_PATH
    assert not (tmp_path / "real" / "c").exists()


def test_a_group_readable_state_directory_is_refused(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    os.chmod(state.root, 0o750)
    with pytest.raises(TaskError) as err:
        CollectorState.open(state.root)
    assert err.value.code is ErrorCode.INVALID_PATH


def test_keygen_writes_a_private_seed_and_loads_it_back(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    key = state.generate_key()
    assert stat.S_IMODE(os.stat(state.key_path).st_mode) == 0o600
    assert public_key_hex(key.seed) == key.public_key
    assert key.key_id == key_id_for(key.public_key)
    assert state.load_key() == key


def test_an_existing_key_is_never_replaced(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    first = state.generate_key()
    with pytest.raises(TaskError) as err:
        state.generate_key()
    assert err.value.code is ErrorCode.ALREADY_EXISTS
    assert state.load_key() == first


def test_a_key_file_readable_by_others_is_refused(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    state.generate_key()
    os.chmod(state.key_path, 0o644)
    with pytest.raises(TaskError) as err:
        state.load_key()
    assert err.value.code is ErrorCode.INVALID_PATH


def test_attempt_directories_are_one_digest_component(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    component = state.attempt_component(
        audience="a", task_id="../../etc", attempt_id="x/y", attempt_digest="b" * 64, fence=1
    )
    assert len(component) == 64
    attempt = state.attempt(component, create=True)
    assert attempt.path.parent == state.root / "attempts"
    with pytest.raises(TaskError):
        state.attempt("../escape", create=True)


def test_attempt_components_differ_by_fence(tmp_path):
    kwargs = dict(audience="a", task_id="t", attempt_id="x", attempt_digest="b" * 64)
    assert CollectorState.attempt_component(fence=1, **kwargs) != (
        CollectorState.attempt_component(fence=2, **kwargs)
    )


def test_a_second_reservation_is_execution_uncertain(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    attempt = state.attempt("a" * 64, create=True)
    attempt.reserve({"n": 1})
    with pytest.raises(TaskError) as err:
        attempt.reserve({"n": 2})
    assert err.value.code is ErrorCode.EXECUTION_UNCERTAIN


def test_retained_transfer_bytes_are_never_replaced(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    attempt = state.attempt("a" * 64, create=True)
    attempt.retain_transfer(b"first")
    with pytest.raises(TaskError) as err:
        attempt.retain_transfer(b"second")
    assert err.value.code is ErrorCode.ALREADY_EXISTS
    assert attempt.read_transfer() == b"first"


def test_a_damaged_key_file_is_an_integrity_failure_not_a_traceback(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    state.generate_key()
    os.chmod(state.key_path, 0o600)
    state.key_path.write_text("{not json")
    with pytest.raises(TaskError) as err:
        state.load_key()
    assert err.value.code is ErrorCode.INTEGRITY_FAILURE


def test_a_damaged_state_file_is_an_integrity_failure(tmp_path):
    state = CollectorState.open(tmp_path / "c", create=True)
    component = state.attempt_component(
        audience="a", task_id="t", attempt_id="x", attempt_digest="b" * 64, fence=1
    )
    attempt = state.attempt(component, create=True)
    durable_write(attempt.descriptor_path, b"{not json", exclusive=True)
    os.chmod(attempt.descriptor_path, 0o600)
    with pytest.raises(TaskError) as err:
        attempt.read_json(attempt.descriptor_path)
    assert err.value.code is ErrorCode.INTEGRITY_FAILURE


def test_a_killed_attempt_is_one_status_row_before_and_after_it_is_released(tmp_path):
    # A collection killed mid-run: its claim is recorded ("claimed", no directory named yet),
    # its directory holds the descriptor and the reservation, nothing signed.
    from taskcore.collector.state import collector_status

    state = CollectorState.open(tmp_path / "c", create=True)
    attempt_id = "a-" + "1" * 32
    state.record_claim(attempt_id, "claimed", change_id="died", step_id="tests", task_id="t-1")
    attempt = state.attempt("b" * 64, create=True)
    attempt.write_json(attempt.descriptor_path, {"binding": {"attempt_id": attempt_id}})
    attempt.reserve({"attempt_id": attempt_id})
    other = state.attempt("c" * 64, create=True)  # a directory of an attempt never recorded
    other.write_json(other.descriptor_path, {"binding": {"attempt_id": "a-other"}})

    rows = collector_status(state)
    assert [r["attempt_id"] for r in rows] == [attempt_id, "a-other"]
    assert rows[0]["state"] == "claimed"
    assert (rows[0]["attempt_dir"], rows[0]["reserved"], rows[0]["signed"]) == (
        "b" * 64,
        True,
        False,
    )
    assert rows[1]["state"] == "uncertain"
    # reconcile releases it: still one row, now released, the directory still shown on it
    state.record_claim(attempt_id, "released", note="reconciled")
    rows = collector_status(state)
    assert [(r["attempt_id"], r["state"]) for r in rows] == [
        (attempt_id, "released"),
        ("a-other", "uncertain"),
    ]
