"""The attrs-driven row mapper: column lists, readers, inserts and changed-column updates."""

from __future__ import annotations

import enum

import apsw
import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.store.journal_api import TaskRecord
from taskcore.store.sqlite_journal import TASKS, TRANSITIONS
from taskcore.store.tables import Column, Table


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Row:
    row_id: str
    size: int
    ratio: float | None = None
    blob: bytes = b""
    done: bool = False
    colour: Colour = Colour.RED
    tags: tuple[str, ...] = ()
    seq: int = 0


def _table(placeholder: str = "?") -> Table[Row]:
    return Table(
        "demo",
        Row,
        key=("row_id",),
        generated=("seq",),
        columns={"tags": Column(lambda v: ",".join(v), lambda v: tuple(v.split(",")) if v else ())},
        placeholder=placeholder,
    )


def _db() -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE TABLE demo (row_id TEXT UNIQUE NOT NULL, size INTEGER NOT NULL, ratio REAL, "
        "blob BLOB NOT NULL, done INTEGER NOT NULL, colour TEXT NOT NULL, tags TEXT NOT NULL, "
        "seq INTEGER PRIMARY KEY)"
    )
    return conn


def test_columns_follow_the_fields_in_order() -> None:
    table = _table()
    assert table.columns == ("row_id", "size", "ratio", "blob", "done", "colour", "tags", "seq")
    assert table.select() == ("SELECT row_id, size, ratio, blob, done, colour, tags, seq FROM demo")
    assert table.select("d").startswith("SELECT d.row_id, d.size")


def test_insert_leaves_generated_columns_to_the_database() -> None:
    sql, args = _table().insert(Row(row_id="r", size=1, done=True, tags=("a", "b")))
    assert sql == (
        "INSERT INTO demo (row_id, size, ratio, blob, done, colour, tags) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    assert args == ("r", 1, None, b"", 1, "red", "a,b")


def test_the_journal_tables_for_psycopg() -> None:
    pg = TASKS.for_placeholder("%s")
    assert pg.columns == TASKS.columns
    assert "?" not in pg.insert(TASKS.from_row(_task_row()))[0]
    assert pg.update(
        TASKS.from_row(_task_row()), attrs.evolve(TASKS.from_row(_task_row()), state="claimed")
    ) == ("UPDATE journal_task SET state = %s WHERE task_id = %s", ("claimed", "t"))


def _task_row() -> tuple[object, ...]:
    return ("t", "d", 1, "r", "p", "c", "s", 0, b"{}", "pending", 1, None, None, 0, 0)


def test_psycopg_placeholder() -> None:
    table = _table("%s")
    assert table.insert(Row(row_id="r", size=1))[0].endswith("VALUES (%s, %s, %s, %s, %s, %s, %s)")
    sql, args = table.update_columns(Row(row_id="r", size=2), ("size",))
    assert (sql, args) == ("UPDATE demo SET size = %s WHERE row_id = %s", (2, "r"))
    with pytest.raises(ValueError, match="placeholder"):
        _table("$1")


@given(
    size=st.integers(-(2**63), 2**63 - 1),
    ratio=st.none() | st.floats(allow_nan=False),
    blob=st.binary(max_size=64),
    done=st.booleans(),
    colour=st.sampled_from(Colour),
    tags=st.lists(st.text("abc", min_size=1, max_size=3), max_size=3).map(tuple),
)
def test_round_trip_through_sqlite(
    size: int, ratio: float | None, blob: bytes, done: bool, colour: Colour, tags: tuple[str, ...]
) -> None:
    table = _table()
    conn = _db()
    row = Row(row_id="r", size=size, ratio=ratio, blob=blob, done=done, colour=colour, tags=tags)
    conn.execute(*table.insert(row))
    back = table.from_row(conn.execute(f"{table.select()} WHERE row_id = 'r'").fetchone())
    assert back == attrs.evolve(row, seq=back.seq)
    assert isinstance(back.done, bool)
    assert isinstance(back.colour, Colour)


def test_update_writes_only_changed_columns() -> None:
    table = _table()
    conn = _db()
    before = Row(row_id="r", size=1, blob=b"x")
    conn.execute(*table.insert(before))
    after = attrs.evolve(before, size=2, done=True)
    statement = table.update(before, after)
    assert statement == ("UPDATE demo SET size = ?, done = ? WHERE row_id = ?", (2, 1, "r"))
    # A column changed behind the mapper's back is left alone: only changed columns are sent.
    conn.execute("UPDATE demo SET blob = x'ff' WHERE row_id = 'r'")
    assert statement is not None
    conn.execute(*statement)
    got = table.from_row(conn.execute(table.select()).fetchone())
    assert (got.size, got.done, got.blob) == (2, True, b"\xff")
    assert table.update(after, after) is None


def test_update_never_moves_a_row() -> None:
    with pytest.raises(ValueError, match="key row_id"):
        _table().update(Row(row_id="a", size=1), Row(row_id="b", size=1))


def test_update_columns_with_a_condition() -> None:
    sql, args = _table().update_columns(
        Row(row_id="r", size=3), ("size",), where="seq = ?", params=(7,)
    )
    assert sql == "UPDATE demo SET size = ? WHERE row_id = ? AND seq = ?"
    assert args == (3, "r", 7)
    with pytest.raises(ValueError, match="at least one"):
        _table().update_columns(Row(row_id="r", size=3), ())


def test_a_type_without_a_column_is_refused_when_the_table_is_built() -> None:
    with pytest.raises(ValueError, match="tags"):
        Table("demo", Row, key=("row_id",))
    with pytest.raises(ValueError, match="no stored field"):
        Table("demo", Row, key=("nope",), columns={"tags": Column(str, str)})
    with pytest.raises(ValueError, match="identifier"):
        Table("demo; DROP", Row, key=("row_id",))


@attrs.frozen(kw_only=True)
class Wire:
    version: int
    commit: str
    note: str | None


def test_fixed_and_renamed_fields() -> None:
    table = Table("wire", Wire, key=("commit",), fixed={"version": 1}, renamed={"commit": "oid"})
    assert table.columns == ("oid", "note")
    assert table.fields == ("commit", "note")
    assert table.from_row(("c", None)) == Wire(version=1, commit="c", note=None)
    assert table.insert(Wire(version=1, commit="c", note="n")) == (
        "INSERT INTO wire (oid, note) VALUES (?, ?)",
        ("c", "n"),
    )
    assert table.update(
        Wire(version=1, commit="c", note=None), Wire(version=1, commit="c", note="n")
    ) == ("UPDATE wire SET note = ? WHERE oid = ?", ("n", "c"))


def test_journal_tables_cover_every_field() -> None:
    assert TASKS.columns == tuple(f.name for f in attrs.fields(TaskRecord))
    assert (
        "seq"
        not in TRANSITIONS.insert(
            TRANSITIONS.record(
                at_ms=1,
                task_id="t",
                attempt_id=None,
                event="claim",
                from_state="pending",
                to_state="claimed",
                fence=1,
                owner_id="o",
                agent_id="a",
                request_id=None,
            )
        )[0]
    )


def test_extra_columns_and_read_only_expressions() -> None:
    @attrs.frozen(kw_only=True)
    class Blob:
        blob_id: str
        length: int

    table = Table(
        "blobs", Blob, key=("blob_id",), generated=("length",), renamed={"length": "length(data)"}
    )
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE blobs (blob_id TEXT PRIMARY KEY, data BLOB NOT NULL, seq INTEGER)")
    sql, args = table.insert(Blob(blob_id="b", length=0), extra={"data": b"abc", "seq": 7})
    assert sql == "INSERT INTO blobs (blob_id, data, seq) VALUES (?, ?, ?)"
    conn.execute(sql, args)
    assert table.from_row(conn.execute(table.select()).fetchone()) == Blob(blob_id="b", length=3)
    with pytest.raises(ValueError, match="identifier"):
        table.insert(Blob(blob_id="b", length=0), extra={"x; DROP": 1})
    with pytest.raises(ValueError, match="identifier"):
        Table("blobs", Blob, key=("blob_id",), renamed={"length": "length(data)"})
