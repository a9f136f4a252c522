"""store/postgres/connection.py: the SQLite dialect translated, errors mapped, inserts undone alone."""

from __future__ import annotations

import apsw
import psycopg
import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.postgres.connection import PgConnection, translate


def test_placeholders_outside_literals_only_and_percent_doubled():
    assert translate("SELECT '?', x FROM t WHERE a = ? AND b = 'it''s ?%'") == (
        "SELECT '?', x FROM t WHERE a = %s AND b = 'it''s ?%%'"
    )
    assert translate("SELECT 1 FROM t INDEXED BY t_i WHERE rowid IN (?)") == (
        "SELECT 1 FROM t WHERE ctid IN (%s)"
    )


@pytest.fixture
def conn(postgres_url):
    raw = psycopg.connect(postgres_url, autocommit=True)
    raw.execute("DROP TABLE IF EXISTS pg_child, pg_parent")
    raw.execute("CREATE TABLE pg_parent (id TEXT PRIMARY KEY, n BIGINT CHECK (n >= 0))")
    raw.execute("CREATE TABLE pg_child (id TEXT PRIMARY KEY REFERENCES pg_parent (id))")
    raw.execute("BEGIN")
    yield PgConnection(raw)
    raw.execute("ROLLBACK")
    raw.execute("DROP TABLE IF EXISTS pg_child, pg_parent")
    raw.close()


def test_a_refused_insert_is_undone_alone_and_the_transaction_goes_on(conn):
    conn.execute("INSERT INTO pg_parent (id, n) VALUES (?, ?)", ("a", 1))
    assert conn.changes() == 1
    with pytest.raises(apsw.ConstraintError, match="PRIMARY KEY"):
        conn.execute("INSERT INTO pg_parent (id, n) VALUES (?, ?)", ("a", 2))
    with pytest.raises(apsw.ConstraintError, match="FOREIGN KEY") as info:
        conn.execute("INSERT INTO pg_child (id) VALUES (?)", ("ghost",))
    assert info.value.extendedresult == 787  # what sqlite_authority.py tests for
    with pytest.raises(apsw.ConstraintError, match="CHECK"):
        conn.execute("INSERT INTO pg_parent (id, n) VALUES (?, ?)", ("b", -1))
    # SQLite's statement rollback: the first row is still there, the transaction usable.
    assert conn.execute("SELECT id, n FROM pg_parent").fetchall() == [("a", 1)]
    conn.execute("UPDATE pg_parent SET n = ? WHERE id = ?", (5, "a"))
    assert conn.changes() == 1
    assert conn.execute("SELECT n FROM pg_parent WHERE id = ?", ("a",)).fetchone() == (5,)


def test_out_of_range_integers_and_nul_characters_are_typed(conn):
    with pytest.raises(OverflowError):
        conn.execute("INSERT INTO pg_parent (id, n) VALUES (?, ?)", ("big", 2**63))
    with pytest.raises(TaskError) as info:
        conn.execute("INSERT INTO pg_parent (id, n) VALUES (?, ?)", ("nul\x00", 1))
    assert info.value.code is ErrorCode.BAD_INPUT
    assert conn.execute("SELECT count(*) FROM pg_parent").fetchone() == (0,)


def test_blob_literals_and_bytes_round_trip(conn):
    conn.execute("CREATE TEMP TABLE pg_blob (b BYTEA)")
    conn.execute("INSERT INTO pg_blob (b) VALUES (x'00ff'), (?)", (b"\x00\x01raw",))
    assert conn.execute("SELECT b FROM pg_blob ORDER BY b").fetchall() == [
        (b"\x00\x01raw",),
        (b"\x00\xff",),
    ]
