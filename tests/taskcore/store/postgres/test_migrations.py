"""store/postgres/migrations.py: versions per component, applied once, a newer schema refused."""

from __future__ import annotations

import threading

import psycopg
import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.postgres.migrations import (
    COMPONENTS,
    SchemaTooNewError,
    migrate,
    schema_versions,
)
from taskcore.store.storage import journal_components


def _drop_everything(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture
def empty(postgres_url):
    """An empty database; emptied again after, so the next test's open migrates afresh."""
    _drop_everything(postgres_url)
    yield postgres_url
    _drop_everything(postgres_url)


def test_every_sqlite_component_has_a_postgresql_twin_at_the_same_version():
    assert [(c.name, c.latest) for c in COMPONENTS] == [
        (c.name, c.latest) for c in journal_components()
    ]


def test_migrate_applies_each_migration_once(empty):
    with psycopg.connect(empty, autocommit=True) as conn:
        first = migrate(conn)
        assert len(first) == sum(len(c.migrations) for c in COMPONENTS)
        assert migrate(conn) == []
        assert schema_versions(conn) == {c.name: c.latest for c in COMPONENTS}


def test_concurrent_migrations_serialize_on_the_advisory_lock(empty):
    applied: list[list[str]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def run() -> None:
        try:
            with psycopg.connect(empty, autocommit=True) as conn:
                barrier.wait()
                applied.append(migrate(conn))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(len(a) for a in applied)[:3] == [0, 0, 0]  # one applied, three found it done
    assert sum(len(a) for a in applied) == sum(len(c.migrations) for c in COMPONENTS)


def test_a_newer_schema_is_refused_and_a_behind_one_when_not_applying(empty):
    with psycopg.connect(empty, autocommit=True) as conn:
        migrate(conn)
        conn.execute("UPDATE schema_versions SET version = 99 WHERE component = 'journal'")
        with pytest.raises(SchemaTooNewError) as info:
            migrate(conn)
        assert info.value.code is ErrorCode.STORAGE_UNAVAILABLE
        assert (info.value.component, info.value.have) == ("journal", 99)
        conn.execute("UPDATE schema_versions SET version = 1 WHERE component = 'journal'")
        with pytest.raises(TaskError) as behind:
            migrate(conn, apply=False)
        assert "agent-task db migrate" in behind.value.message
