"""One PostgreSQL connection seen through the calls the SQL stores make.

The SQLite stores (``store/sqlite_*.py``) talk to a connection through three calls:
``execute(sql, args)`` returning an iterable cursor with ``fetchone``/``fetchall``,
``changes()`` and ``last_insert_rowid()``. :class:`PgConnection` gives those three calls
over a psycopg 3 connection, so the PostgreSQL backend reuses every statement the SQLite
stores hold and overrides only where the dialects differ (``store/postgres/stores.py``).

The translation is small and total:

* ``?`` placeholders become ``%s`` (a literal ``%`` is doubled); string literals are kept;
* ``INDEXED BY name`` (a SQLite planner hint) is dropped; ``rowid`` becomes ``ctid``; a blob
  literal ``x'00ff'`` becomes ``decode('00ff', 'hex')``;
* ``changes()`` is the row count of the last statement; ``last_insert_rowid()`` is
  ``lastval()`` (every ``INTEGER PRIMARY KEY`` is an identity column here);
* PostgreSQL errors become the apsw exceptions the stores already catch: a unique, primary
  key, foreign key or check violation is ``apsw.ConstraintError`` with SQLite's wording
  (``extendedresult`` 787 for a foreign key), an integer out of range ``OverflowError``.

A statement that fails aborts the PostgreSQL transaction; every store turns a constraint
error into a refusal (a ``TaskError``), so the transaction ends there, as it must.

>>> translate("SELECT a FROM t INDEXED BY t_a WHERE a = ? AND b LIKE '%?' AND rowid = ?")
"SELECT a FROM t WHERE a = %s AND b LIKE '%%?' AND ctid = %s"
>>> translate("UPDATE t SET b = x'' WHERE c = x'0aFF'")
"UPDATE t SET b = decode('', 'hex') WHERE c = decode('0aFF', 'hex')"
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any

import apsw
import psycopg
from psycopg import errors as pg_errors

from taskcore.errors import ErrorCode, TaskError

__all__ = ["PgConnection", "PgCursor", "pg_error", "translate"]

_BLOB = re.compile(r"\b[xX]'([0-9a-fA-F]*)'")
_INDEXED_BY = re.compile(r"\s+INDEXED\s+BY\s+\w+", re.IGNORECASE)
_ROWID = re.compile(r"\browid\b")
_FOREIGN_KEY = 787  # SQLITE_CONSTRAINT_FOREIGNKEY, what sqlite_authority.py tests for


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """Return ``sql`` (SQLite dialect, ``?`` placeholders) as psycopg's PostgreSQL text."""
    sql = _BLOB.sub(r"decode('\1', 'hex')", sql)  # SQLite's blob literal x'00ff'
    out: list[str] = []
    for part in re.split(r"('(?:[^']|'')*')", sql):
        if part.startswith("'") and part.endswith("'") and len(part) >= 2:
            out.append(part.replace("%", "%%"))
            continue
        part = _INDEXED_BY.sub("", part)
        part = _ROWID.sub("ctid", part)
        out.append(part.replace("%", "%%").replace("?", "%s"))
    return "".join(out)


def pg_error(exc: psycopg.Error) -> BaseException:
    """Map a psycopg error to what the SQLite stores and the transaction wrapper expect."""
    if isinstance(exc, pg_errors.ForeignKeyViolation):
        err = apsw.ConstraintError("FOREIGN KEY constraint failed")
        err.extendedresult = _FOREIGN_KEY  # type: ignore[attr-defined]
        return err
    if isinstance(exc, pg_errors.UniqueViolation):
        name = exc.diag.constraint_name or ""
        kind = "PRIMARY KEY" if name.endswith("_pkey") else "UNIQUE"
        return apsw.ConstraintError(f"{kind} constraint failed: {name}")
    if isinstance(exc, pg_errors.CheckViolation | pg_errors.NotNullViolation):
        return apsw.ConstraintError(f"CHECK constraint failed: {exc.diag.constraint_name}")
    if isinstance(exc, pg_errors.NumericValueOutOfRange):
        return OverflowError("integer out of range")
    if isinstance(exc, pg_errors.UntranslatableCharacter | pg_errors.CharacterNotInRepertoire):
        return TaskError(
            ErrorCode.BAD_INPUT, "a string holds a character PostgreSQL cannot store (NUL)"
        )
    return exc


class PgCursor:
    """The rows of one executed statement (an iterator of tuples, like apsw's cursor)."""

    __slots__ = ("_rows",)

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)

    def fetchone(self) -> tuple[Any, ...] | None:
        """The first row, or ``None``."""
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        """Every row."""
        return self._rows


class PgConnection:
    """A psycopg connection inside one open transaction, with apsw's three calls."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn
        self._changes = 0

    def execute(self, sql: str, args: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement (SQLite dialect); return its rows."""
        if "\x00" in sql:
            raise TaskError(ErrorCode.BAD_INPUT, "a statement holds a NUL character")
        if args is not None:
            args = [
                _no_nul(a) if isinstance(a, str) else (bytes(a) if isinstance(a, memoryview) else a)
                for a in args
            ]
        query = translate(sql)
        try:
            if _is_insert(sql):
                cur = self._insert(query, args)
            else:
                cur = self.raw.execute(query, args, prepare=None)
        except psycopg.Error as exc:
            mapped = pg_error(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        self._changes = max(cur.rowcount, 0)
        rows = cur.fetchall() if cur.description is not None else []
        return PgCursor(rows)

    def _insert(self, query: str, args: Sequence[Any] | None) -> psycopg.Cursor[Any]:
        """Run an INSERT inside a savepoint, sent in one round trip (pipeline mode).

        SQLite undoes a failed statement and keeps the transaction; PostgreSQL aborts the
        whole transaction. The stores (and their tests) go on after a refused insert (a
        duplicate, a missing parent row), so a failed insert is rolled back to its savepoint.
        """
        # Nothing in the pipeline is a prepared statement: a statement skipped after an error
        # would leave psycopg believing it prepared one the server never saw.
        try:
            with self.raw.pipeline():
                self.raw.execute("SAVEPOINT agent_task_insert", prepare=False)
                cur = self.raw.execute(query, args, prepare=False)
                self.raw.execute("RELEASE SAVEPOINT agent_task_insert", prepare=False)
        except psycopg.Error:
            self.raw.execute("ROLLBACK TO SAVEPOINT agent_task_insert", prepare=False)
            self.raw.execute("RELEASE SAVEPOINT agent_task_insert", prepare=False)
            raise
        return cur

    def changes(self) -> int:
        """Rows the last statement inserted, updated or deleted."""
        return self._changes

    def last_insert_rowid(self) -> int:
        """The identity the last insert assigned (``lastval()``)."""
        row = self.raw.execute("SELECT lastval()").fetchone()
        assert row is not None
        return int(row[0])


def _is_insert(sql: str) -> bool:
    return sql.lstrip()[:6].upper() == "INSERT"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "a string holds a NUL character (U+0000), which PostgreSQL text cannot store",
        )
    return value
