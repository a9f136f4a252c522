"""taskcore.dbadmin: migrate and status of the journal the environment names, both backends."""

import pytest
from taskcore.dbadmin import journal_status, migrate_journal
from taskcore.errors import ErrorCode, TaskError
from taskcore.store import open_storage


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend


def test_migrate_and_status_agree(tmp_path, backend):
    open_storage(tmp_path / "d", create=True).close()
    migrated = migrate_journal(tmp_path / "d")
    assert migrated["backend"] == backend
    assert migrated["applied"] == []
    assert journal_status(tmp_path / "d") == {
        "backend": backend,
        "schema": migrated["schema"],
    }


@pytest.mark.backend_only("sqlite", reason="a missing SQLite journal is a missing file")
def test_a_missing_sqlite_journal_is_not_created(tmp_path, backend):
    with pytest.raises(TaskError) as info:
        migrate_journal(tmp_path / "nothing")
    assert info.value.code is ErrorCode.NOT_FOUND
    assert not (tmp_path / "nothing").exists()
