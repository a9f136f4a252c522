"""Each migration, from every earlier schema version, ends at a fresh journal's schema.

For every component and every version ``v`` below its latest, a journal is made with that
component at ``v`` and every other at its latest (the order an upgrade meets: the others'
migrations already ran), then opened with this release: its migrations run forward, the
recorded versions are the latest, and the schema (SQLite: ``sqlite_master``; PostgreSQL:
columns, indexes, constraints, triggers, functions, sequences) equals a fresh journal's.

And the other direction is refused: a journal a newer release migrated (a component's
recorded version above this code's) is never opened for writing, on either backend, and the
fixture of each release keeps its rows when that happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import psycopg
import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import Service
from taskcore.store.postgres import migrations as pg_migrations
from taskcore.store.postgres.storage import PostgresStorage
from taskcore.store.sqlite import Component, SqliteDatabase
from taskcore.store.storage import DATABASE_ENV, journal_components, open_storage

from tests.conftest import PostgresServer, _need_server
from tests.upgrade.support import (
    ScratchDatabase,
    copy_data_dir,
    fixture_dirs,
    manifest,
    postgres_counts,
    postgres_schema,
    restore_dump,
    sqlite_counts,
    sqlite_schema,
)


def _earlier(components: tuple[Component, ...]) -> list[tuple[str, int]]:
    return [(c.name, v) for c in components for v in range(c.latest)]


def _at(components: tuple[Component, ...], name: str, version: int) -> tuple[Component, ...]:
    """``components`` with ``name`` cut back to its migrations up to ``version``."""
    return tuple(
        Component(c.name, tuple(m for m in c.migrations if m.version <= version))
        if c.name == name
        else c
        for c in components
    )


SQLITE_CASES = _earlier(journal_components())
PG_CASES = _earlier(pg_migrations.COMPONENTS)


def test_every_component_has_an_earlier_version_to_start_from() -> None:
    assert {n for n, _ in SQLITE_CASES} == {c.name for c in journal_components()}
    assert {n for n, _ in PG_CASES} == {c.name for c in pg_migrations.COMPONENTS}


# -- SQLite ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh_sqlite(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, str, str]]:
    data = tmp_path_factory.mktemp("fresh") / "data"
    open_storage(data, create=True, database="").close()
    return sqlite_schema(data / "journal.sqlite")


@pytest.mark.parametrize(("component", "version"), SQLITE_CASES, ids=lambda v: str(v))
def test_sqlite_migrates_forward_from_an_earlier_version(
    component: str,
    version: int,
    tmp_path: Path,
    fresh_sqlite: list[tuple[str, str, str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DATABASE_ENV, raising=False)
    data = tmp_path / "data"
    data.mkdir()
    journal = data / "journal.sqlite"
    SqliteDatabase(journal, _at(journal_components(), component, version), create=True).close()
    before = sqlite_schema(journal)
    assert before != fresh_sqlite  # the component really is behind
    storage = open_storage(data, database="")
    try:
        assert storage.schema() == {c.name: c.latest for c in journal_components()}
    finally:
        storage.close()
    assert sqlite_schema(journal) == fresh_sqlite


# -- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scratch(request: pytest.FixtureRequest, postgres_server: PostgresServer) -> Iterator[str]:
    _need_server(request.config, postgres_server)
    db = ScratchDatabase(postgres_server.admin_url, f"{postgres_server.name}_mig").create()
    try:
        yield db.url
    finally:
        db.drop()


@pytest.fixture(scope="module")
def fresh_postgres(scratch: str) -> dict[str, list[tuple[object, ...]]]:
    _reset(scratch)
    PostgresStorage(scratch).close()
    return postgres_schema(scratch)


def _reset(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.mark.parametrize(("component", "version"), PG_CASES, ids=lambda v: str(v))
def test_postgresql_migrates_forward_from_an_earlier_version(
    component: str,
    version: int,
    scratch: str,
    fresh_postgres: dict[str, list[tuple[object, ...]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _reset(scratch)
    with monkeypatch.context() as patch:
        patch.setattr(
            pg_migrations, "COMPONENTS", _at(pg_migrations.COMPONENTS, component, version)
        )
        with psycopg.connect(scratch, autocommit=True) as conn:
            pg_migrations.migrate(conn)
            # The component really is behind: recorded so, and its schema differs unless every
            # later migration is one with nothing to create on PostgreSQL (queue 4: replicas
            # hear commits by NOTIFY, where SQLite needs a change counter table).
            assert pg_migrations.schema_versions(conn).get(component, 0) == version
    if any(m.sql.strip() != "SELECT 1" for m in _later(component, version)):
        assert postgres_schema(scratch) != fresh_postgres
    storage = PostgresStorage(scratch)
    try:
        behind = [f"{component} {m.version}" for m in _later(component, version)]
        assert storage.applied == behind
        assert storage.schema() == {c.name: c.latest for c in pg_migrations.COMPONENTS}
    finally:
        storage.close()
    assert postgres_schema(scratch) == fresh_postgres


def _later(component: str, version: int) -> list[pg_migrations.Migration]:
    [found] = [c for c in pg_migrations.COMPONENTS if c.name == component]
    return sorted((m for m in found.migrations if m.version > version), key=lambda m: m.version)


# -- a newer release's journal is refused ----------------------------------------------------

NEWEST = fixture_dirs()[-1]


_QUEUE = {c.name: c.latest for c in journal_components()}["queue"]
_NEWER = f"UPDATE schema_versions SET version = {_QUEUE + 1} WHERE component = 'queue'"
"""A newer release's queue schema: one version past this code's."""


@pytest.mark.backend_only("sqlite", reason="the SQLite half of the pair below")
def test_a_sqlite_journal_from_a_newer_release_is_refused(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = copy_data_dir(NEWEST / "sqlite" / "data", tmp_path / "data")
    journal = data / "journal.sqlite"
    conn = apsw.Connection(str(journal))
    conn.execute(_NEWER)
    conn.close()
    before = sqlite_counts(journal)
    copy = journal.read_bytes()
    for opening in (lambda: Service.open(data), lambda: open_storage(data, database="")):
        with pytest.raises(TaskError) as err:
            opening().close()
        assert err.value.code is ErrorCode.STORAGE_UNAVAILABLE
        assert "queue" in str(err.value)
        assert "newer" in str(err.value)
    with pytest.raises(TaskError) as err:  # read-only: refused too (behind or ahead)
        open_storage(data, readonly=True, database="").close()
    assert err.value.code is ErrorCode.STORAGE_UNAVAILABLE
    assert journal.read_bytes() == copy  # nothing was written, nothing migrated
    assert sqlite_counts(journal) == before


@pytest.mark.backend_only("postgresql", reason="the PostgreSQL half of the pair above")
def test_a_postgresql_journal_from_a_newer_release_is_refused(
    backend: str, scratch: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _reset(scratch)
    restore_dump(NEWEST / "postgresql" / "dump.sql", scratch)
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute(_NEWER)
    before = postgres_counts(scratch)
    data = copy_data_dir(NEWEST / "postgresql" / "data", tmp_path / "data")
    monkeypatch.setenv(DATABASE_ENV, scratch)
    with psycopg.connect(scratch, autocommit=True) as conn:
        versions = pg_migrations.schema_versions(conn)
    for opening in (
        lambda: Service.open(data),
        lambda: open_storage(data),
        lambda: open_storage(data, readonly=True),
    ):
        with pytest.raises(TaskError) as err:
            opening().close()
        assert err.value.code is ErrorCode.STORAGE_UNAVAILABLE
        assert "queue" in str(err.value)
        assert "newer" in str(err.value)
    assert postgres_counts(scratch) == before  # nothing written, nothing migrated
    with psycopg.connect(scratch, autocommit=True) as conn:
        assert pg_migrations.schema_versions(conn) == versions
    assert (
        before["counts"]["queue_task"]
        == manifest(NEWEST)["backends"]["postgresql"]["counts"]["queue_task"]
    )
