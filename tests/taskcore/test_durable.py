"""Durable private files (taskcore.durable)."""

import os

import pytest
from taskcore.durable import durable_write
from taskcore.errors import ErrorCode, TaskError


def test_durable_write_leaves_no_temporary_file(tmp_path):
    durable_write(tmp_path / "f", b"data")
    assert sorted(os.listdir(tmp_path)) == ["f"]
    assert (tmp_path / "f").read_bytes() == b"data"


def test_an_exclusive_write_never_replaces_and_a_replacing_write_does(tmp_path):
    path = tmp_path / "f"
    durable_write(path, b"first")
    with pytest.raises(TaskError) as err:
        durable_write(path, b"second")
    assert err.value.code is ErrorCode.ALREADY_EXISTS
    assert path.read_bytes() == b"first"
    durable_write(path, b"third", exclusive=False)
    assert path.read_bytes() == b"third"
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_a_symlink_in_place_of_the_file_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    (tmp_path / "f").symlink_to(target)
    with pytest.raises(TaskError) as err:
        durable_write(tmp_path / "f", b"data")
    assert err.value.code is ErrorCode.ALREADY_EXISTS
    assert target.read_bytes() == b"keep"
