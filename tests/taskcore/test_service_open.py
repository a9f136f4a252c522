"""``Service.open(data_dir=None, *, database=None)``: where a library caller's journal is.

A URL is never taken for a data directory (it used to become a directory named
``postgresql:``); a PostgreSQL journal is opened with ``database=``, with the semantics of
``agent-task serve --database``: the database is the journal, the data dir keeps the
authority key.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from taskcore import Service
from taskcore.errors import ErrorCode, TaskError

URLS = [
    "postgresql://app:s3cret@db.internal:5432/tasks",
    "postgres://app@db.internal/tasks",
    "sqlite:///var/lib/agent-task",
    "file:///tmp/data",
]


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory, so nothing a refused call might create can hide."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("AGENT_TASK_DATABASE", raising=False)
    return cwd


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("as_path", [False, True], ids=["str", "Path"])
def test_a_url_is_never_taken_for_a_data_dir(elsewhere, url, as_path):
    with pytest.raises(TaskError) as info:
        Service.open(Path(url) if as_path else url)
    assert info.value.code is ErrorCode.INVALID_PATH
    assert "database=" in info.value.message
    assert "s3cret" not in str(info.value)  # the URL's password is never repeated
    assert list(elsewhere.iterdir()) == []  # no directory named after the scheme


def test_a_database_that_is_not_a_postgresql_url_is_refused(elsewhere, tmp_path):
    with pytest.raises(TaskError) as info:
        Service.open(tmp_path / "data", database="mysql://app:s3cret@db/tasks")
    assert info.value.code is ErrorCode.INVALID_VALUE
    assert "s3cret" not in str(info.value)
    assert not (tmp_path / "data").exists()


def test_the_default_data_dir_is_the_one_agent_task_uses(elsewhere, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_DATA_DIR", str(tmp_path / "env-data"))
    service = Service.open()
    try:
        assert service.config.data_dir == tmp_path / "env-data"
        assert (tmp_path / "env-data" / "journal.sqlite").exists()
        assert service.health()["backend"] == "sqlite"
    finally:
        service.close()


def test_an_empty_database_forces_the_sqlite_journal(elsewhere, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_DATABASE", "postgresql://nobody@127.0.0.1:1/none")
    service = Service.open(tmp_path / "data", database="")
    try:
        assert service.health()["backend"] == "sqlite"
        assert (tmp_path / "data" / "journal.sqlite").exists()
    finally:
        service.close()


def test_existing_callers_pass_the_data_dir_positionally(elsewhere, tmp_path):
    service = Service.open(str(tmp_path / "data"), init=False)
    try:
        assert service.config.data_dir == tmp_path / "data"
    finally:
        service.close()


def test_database_opens_the_postgresql_journal_as_serve_database_does(
    elsewhere, tmp_path, postgres_url
):
    service = Service.open(tmp_path / "replica", database=postgres_url)
    try:
        assert service.health()["backend"] == "postgresql"
        # The replica's own files are in the data dir; the journal is not.
        assert (tmp_path / "replica" / "authority-key.json").exists()
        assert not (tmp_path / "replica" / "journal.sqlite").exists()
        assert "AGENT_TASK_DATABASE" not in os.environ
    finally:
        service.close()
