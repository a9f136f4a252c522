"""The suite's own PostgreSQL reset: every test starts from an empty schema.

``PostgresServer.reset`` deletes only the rows of tables that hold any (referring tables
first) and restarts the sequences a test used, instead of truncating the whole schema; these
tests hold it to the end state a full ``TRUNCATE ... RESTART IDENTITY`` leaves.
"""

from __future__ import annotations

import psycopg
import pytest
from taskcore import Service

from tests.conftest import _KEEP, PostgresServer, _need_server, _referring_first
from tests.taskcore.queue.support import WORKER, Door

pytestmark = pytest.mark.backend_only("postgresql", reason="the reset of the PostgreSQL database")


@pytest.fixture
def server(request: pytest.FixtureRequest, postgres_server: PostgresServer) -> PostgresServer:
    _need_server(request.config, postgres_server)
    return postgres_server


def _tables(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return [r[0] for r in rows.fetchall() if r[0] not in _KEEP]


def test_a_reset_empties_every_table_and_restarts_every_sequence(server, backend, tmp_path):
    service = Service.open(tmp_path)
    try:
        door = Door(service, service.clock)  # type: ignore[arg-type]
        for _ in range(3):
            task_id = door.claimed()["task"]["taskId"]
            body = {"taskId": task_id, "phaseKey": "p", "state": {"k": 1}, "outputs": []}
            door(WORKER, "agenttask.checkpoint.write", body)  # a row referring to its task
    finally:
        service.close()
    with psycopg.connect(server.url) as conn:
        tables = _tables(conn)
        held = [t for t in tables if conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]]
        assert {"queue_task", "queue_checkpoint", "audit_event"} <= set(held)
    server.reset()
    with psycopg.connect(server.url) as conn:
        assert all(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] == 0 for t in tables)
        used = conn.execute(
            "SELECT sequencename FROM pg_sequences"
            " WHERE schemaname = 'public' AND last_value IS NOT NULL"
        ).fetchall()
        assert used == []
        kept = conn.execute("SELECT count(*) FROM schema_versions").fetchone()[0]
        assert kept > 0  # the schema record stays: the next open does not migrate again


def test_tables_are_ordered_before_the_tables_they_refer_to(server, backend, tmp_path):
    Service.open(tmp_path).close()  # the schema exists
    with psycopg.connect(server.url) as conn:
        tables = _tables(conn)
        order = _referring_first(conn, tables)
        edges = conn.execute(
            "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint"
            " WHERE contype = 'f'"
        ).fetchall()
    assert sorted(order) == sorted(tables)
    assert edges  # the journal has foreign keys, so the order is tested
    for referring, referred in edges:
        if referring in tables and referred in tables and referring != referred:
            assert order.index(referring) < order.index(referred), (referring, referred)
