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

The call path, in round trips (issue 30). A row-safe queue call is three or four: ``BEGIN``
+ writer lock + token re-check (one simple query), the verb's own statements, then audit
event + ``NOTIFY`` + ``COMMIT`` (one simple query); the queue cycle (create + claimNext +
checkpoint DONE) is 8 (it was 25, then 13, then 10):

* **A write that cannot miss goes with the next statement.** A shared writer's
  compare-and-set ``UPDATE`` of a row it holds locked (claimNext's ``SKIP LOCKED`` row, a
  task read ``for_update``), or a single create's task ``INSERT`` (nothing read back), is
  sent in one simple query with the next read or with the ``COMMIT``
  (:meth:`PgConnection.defer_write`).
* **A read known before the call goes with its first statement.** ``checkpoint`` and
  ``release`` read their task ``FOR UPDATE`` right after the token re-check: that read is
  sent in the re-check's simple query (:meth:`PgConnection.read_ahead`).
* **Literals written here.** A simple query's strings, integers, floats, booleans and
  ``NULL`` are bound by :func:`~taskcore.store.postgres.literals.literal` (as psycopg
  writes them); other values by psycopg's ``mogrify``. They are not SQL-level prepared
  statements (``PREPARE``/``EXECUTE``): PgBouncer in transaction mode (docs/deploy.md) does
  not carry those from one server connection to the next.

* **The transaction's first statement carries its ``BEGIN``.** A transaction opened with
  ``begin`` statements sends them with its first statement: the writer lock and the call's
  token re-check arrive together. By default (loopback or Unix-socket server) when that
  statement is a read, as one simple query, its values bound client-side by psycopg
  (``ClientCursor.mogrify``): each statement of a simple query takes its own snapshot, so
  the read sees every commit made before the lock was granted. Any other first statement
  waits for the ``BEGIN`` to go alone. (The storage does this for a shared write only, the
  row-safe queue verbs; it starts every other transaction when it opens, so a ``write()``
  held open holds the writer lock.) With ``pipelined`` (the URL's ``?pipeline=on``, meant
  for a server across a network) the ``BEGIN`` goes with any first statement in one
  pipeline; on loopback psycopg's pipeline machinery costs more than the round trip it
  saves (measured: ``BEGIN`` + lock, then the token read, as two round trips, 0.12 ms and
  0.05 ms of CPU; the same in one pipeline, 0.24-0.39 ms and 0.10-0.14 ms of CPU), and
  deferred writes run at once if a statement follows them (:func:`pipelined_for`).
* **No savepoint where no statement needs rolling back.** A one-row ``INSERT ... VALUES``
  into a table with no foreign key (:class:`InsertFacts`, read once per storage) is sent as
  ``INSERT ... ON CONFLICT DO NOTHING``: a duplicate key inserts nothing and is reported as
  the ``apsw.ConstraintError`` SQLite raises, with the transaction still usable, so no
  savepoint is needed. Other inserts (foreign keys, several rows, ``INSERT ... SELECT``,
  upserts) keep their savepoint, sent with the insert in one pipeline.
* **The identity comes back with the insert.** Such an insert into a table with an identity
  column returns it (``RETURNING``), so ``last_insert_rowid()`` needs no ``lastval()`` round
  trip.
* **The call's audit event travels with the ``COMMIT``** (:meth:`PgConnection.defer`): its
  sequence number is not read back, and a failure fails the commit. Unpipelined it is one
  simple query, ``SAVEPOINT; INSERT ...; RELEASE; SELECT pg_notify(...); COMMIT``, the
  insert's values bound by psycopg; pipelined, the same statements in one pipeline. The
  savepoint stays (:data:`SAVEPOINT_TABLES` says why).
* **Prepared statements.** Statements outside a pipeline or a simple query are prepared by
  psycopg once seen five times on a connection (its ``prepare_threshold``); pooled
  connections keep them. Inserts are not (they ran unprepared before issue 30 and still do).
* **No ``Column`` objects.** A statement's rows are fetched when its result has tuples
  (``_rows``), the test ``cursor.description`` makes without building its ``Column`` list.

>>> translate("SELECT a FROM t INDEXED BY t_a WHERE a = ? AND b LIKE '%?' AND rowid = ?")
"SELECT a FROM t WHERE a = %s AND b LIKE '%%?' AND ctid = %s"
>>> translate("UPDATE t SET b = x'' WHERE c = x'0aFF'")
"UPDATE t SET b = decode('', 'hex') WHERE c = decode('0aFF', 'hex')"
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any

import apsw
import attrs
import psycopg
from psycopg import errors as pg_errors

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.postgres.literals import bind as _bind

__all__ = [
    "InsertFacts",
    "PgConnection",
    "PgCursor",
    "guarded_insert",
    "pg_error",
    "pipelined_for",
    "translate",
]

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


_INSERT_INTO = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)", re.IGNORECASE)
_VALUES = re.compile(r"\bVALUES\s*\(", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)
_CONFLICT = re.compile(r"\bON\s+CONFLICT\b", re.IGNORECASE)
_LITERAL = re.compile(r"'(?:[^']|'')*'")


_CURSOR_ATTR = "_agent_task_cursor"
_SAVEPOINT = "SAVEPOINT agent_task_insert"
_RELEASE = "RELEASE SAVEPOINT agent_task_insert"

SAVEPOINT_TABLES = frozenset({"audit_event"})
"""Tables whose inserts keep the savepoint path whatever their keys: the event log's rows.

With the audit insert as ``ON CONFLICT DO NOTHING`` (no savepoint) the replicas' event
stream missed its catch-up under load (``tests/replicas/test_events.py``, the SIGKILL case,
3 runs of 4). The likely cause: the event log's horizon
(:class:`taskcore.events.log.Horizon`) bounds a gap's writer by the reader's snapshot
``xmax``, which is PostgreSQL's latest *completed* xid + 1, not the next xid to be assigned.
A writer W that took its xid after writer V but drew its seq before V's is invisible to a
reader that sees V's event once V committed, unless some transaction with an xid at or
above W's has completed: W's xid is then at or above ``xmax`` (neither in the snapshot's
running list nor below its ``xmin``), the gap reads as settled, and W's event is skipped.
Inside a savepoint, the insert's subtransaction takes a fresh xid right after drawing the
seq, and V's commit advances the latest completed xid to it: past every xid taken before
V drew its seq, W's included. So the audit insert keeps its savepoint (and the xid held
before the seq, ``_SEQ_AFTER_XID`` in ``store/postgres/stores.py``)."""


@attrs.frozen
class InsertFacts:
    """What the call path needs to know of the schema: read once when a storage opens."""

    with_foreign_keys: frozenset[str] = frozenset()
    """Tables with a foreign key (an insert may fail in a way ``ON CONFLICT`` cannot catch)."""
    identities: tuple[tuple[str, str], ...] = ()
    """``(table, identity column)`` pairs."""

    @classmethod
    def read(cls, conn: psycopg.Connection[Any]) -> InsertFacts:
        """Read them from the database ``conn`` is connected to (its ``public`` tables)."""
        fks = conn.execute(
            "SELECT DISTINCT c.relname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE k.contype = 'f' AND n.nspname = current_schema()"
        ).fetchall()
        identities = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND is_identity = 'YES'"
        ).fetchall()
        return cls(
            with_foreign_keys=frozenset(str(row[0]) for row in fks),
            identities=tuple(sorted((str(t), str(c)) for t, c in identities)),
        )


@functools.lru_cache(maxsize=1024)
def guarded_insert(sql: str, facts: InsertFacts) -> tuple[str, bool] | None:
    """``sql`` (PostgreSQL text) as an insert that cannot fail on a duplicate, or ``None``.

    The statement becomes ``INSERT ... ON CONFLICT DO NOTHING`` and, for a table with an
    identity column, ``RETURNING`` it; the flag says whether it returns the identity. ``None``
    for an insert that keeps its savepoint (see the module).

    >>> facts = InsertFacts(identities=(("t", "seq"),), with_foreign_keys=frozenset({"c"}))
    >>> guarded_insert("INSERT INTO t (a, b) VALUES (%s, (%s))", facts)
    ('INSERT INTO t (a, b) VALUES (%s, (%s)) ON CONFLICT DO NOTHING RETURNING seq', True)
    >>> guarded_insert("INSERT INTO u (a) VALUES (%s) RETURNING a", facts)
    ('INSERT INTO u (a) VALUES (%s) ON CONFLICT DO NOTHING RETURNING a', False)
    >>> guarded_insert("INSERT INTO c (a) VALUES (%s)", facts) is None
    True
    >>> guarded_insert("INSERT INTO u (a) VALUES (%s), (%s)", facts) is None
    True
    >>> guarded_insert("INSERT INTO u (a) SELECT a FROM v", facts) is None
    True
    >>> guarded_insert("INSERT INTO t (a) VALUES (nextval('s)'))", facts)[0]
    "INSERT INTO t (a) VALUES (nextval('s)')) ON CONFLICT DO NOTHING RETURNING seq"
    """
    # Parentheses and keywords inside string literals are not the statement's: look at a copy
    # with every literal's text blanked (same length, so positions carry over).
    masked = _LITERAL.sub(lambda m: "'" + "_" * (len(m.group()) - 2) + "'", sql)
    table = _INSERT_INTO.match(masked)
    values = _VALUES.search(masked)
    if table is None or values is None or _CONFLICT.search(masked):
        return None
    if table.group(1) in facts.with_foreign_keys or table.group(1) in SAVEPOINT_TABLES:
        return None
    depth, end = 0, -1
    for i in range(values.end() - 1, len(masked)):
        if masked[i] == "(":
            depth += 1
        elif masked[i] == ")":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    if end < 0:
        return None
    head, tail = sql[:end], sql[end:].strip().rstrip(";").strip()
    if tail and not _RETURNING.match(masked[end:].strip()):
        return None  # several rows, or something after the row: keep the savepoint
    identity = dict(facts.identities).get(table.group(1))
    if tail:
        return f"{head} ON CONFLICT DO NOTHING {tail}", False
    if identity is None:
        return f"{head} ON CONFLICT DO NOTHING", False
    return f"{head} ON CONFLICT DO NOTHING RETURNING {identity}", True


def pipelined_for(host: str | None, setting: str | None = None) -> bool:
    """Whether to pipeline to a server at ``host`` (see the module): only when asked.

    ``setting`` is the URL's ``pipeline`` parameter (``on``/``off``). Without it: off. A
    loopback or Unix-socket server (a path) is never worth it; a server across a network
    would be, but the pipelined path has not run under the replicas' event-stream test
    (``tests/replicas/test_events.py``), so it is opt-in until it has.

    >>> pipelined_for("127.0.0.1"), pipelined_for("/var/run/postgresql"), pipelined_for("db")
    (False, False, False)
    >>> pipelined_for("db", "on"), pipelined_for("127.0.0.1", "on")
    (True, True)
    """
    if setting is not None:
        return setting == "on"
    return False  # a loopback server never gains; a remote one must opt in (see above)


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
    """A psycopg connection inside one open transaction, with apsw's three calls.

    ``begin`` are the statements that open the transaction: sent with the first statement
    (:meth:`execute`) in one pipeline, or alone by :meth:`start`.
    """

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        facts: InsertFacts | None = None,
        begin: tuple[str, ...] = (),
        pipelined: bool = True,
        row_locks: bool = False,
    ) -> None:
        self.raw = conn
        self.row_locks = row_locks and not pipelined
        """Whether the stores row-lock what they read to write (a shared writer, unpipelined):
        a write they then know cannot miss may be deferred (:meth:`defer_write`)."""
        self._changes = 0
        self._facts = facts
        self._begin = begin
        self._pipelined = pipelined
        self._deferred: list[tuple[str, Sequence[Any] | None]] = []
        self._late: list[tuple[str, list[Any] | None, bool]] = []
        self._rowid: int | None = None
        self._cur: psycopg.Cursor[Any] | None = None
        self._refusals: dict[str, TaskError] = {}
        """A deferred insert's refusal for a duplicate key, by table (:meth:`defer_write`)."""
        self._ahead: tuple[str, list[Any] | None] | None = None
        self._memo: tuple[str, list[Any] | None, list[tuple[Any, ...]], int] | None = None

    @property
    def started(self) -> bool:
        """Whether the transaction's ``BEGIN`` has been sent."""
        return not self._begin

    def _prefix(self) -> list[tuple[str, Sequence[Any] | None]]:
        """What must go before the next statement: the ``BEGIN``, then deferred writes."""
        prefix: list[tuple[str, Sequence[Any] | None]] = [(b, None) for b in self._begin]
        prefix.extend(self._deferred)
        self._begin = ()
        self._deferred = []
        return prefix

    def start(self) -> None:
        """Send the ``BEGIN`` statements (and deferred writes) now, if nothing carried them."""
        self._ahead = None
        if not self._pipelined:
            begin, self._begin = self._begin, ()
            if begin:  # one simple query: no parameters, several statements, one round trip
                self.raw.execute("; ".join(begin))
            return
        prefix = self._prefix()
        if prefix:
            with self.raw.pipeline():
                for statement, args in prefix:
                    self.raw.execute(statement, args, prepare=False)

    def defer(self, sql: str, args: Sequence[Any]) -> None:
        """Run a write whose result nobody reads with the next statement or the ``COMMIT``.

        The call's own audit event is the last write of its transaction: it travels with the
        ``COMMIT`` (one round trip), inside its own savepoint as every audit insert
        (:data:`SAVEPOINT_TABLES`). A failure fails the commit: nothing is written.
        Unpipelined, the ``COMMIT`` is one simple query, so the write's values are bound in
        it by psycopg (:meth:`commit`).
        """
        if "\x00" in sql:
            raise TaskError(ErrorCode.BAD_INPUT, "a statement holds a NUL character")
        query, values = translate(sql), _clean(args)
        self._memo = None
        if not self._pipelined:
            self._late.append((query, values, True))
            return
        self._deferred.extend(((_SAVEPOINT, None), (query, values), (_RELEASE, None)))

    def defer_write(
        self, sql: str, args: Sequence[Any], *, duplicate: TaskError | None = None
    ) -> bool:
        """Send a write that cannot miss with the next statement (or the ``COMMIT``).

        For an ``UPDATE`` of a row this transaction holds locked since it read it (the
        caller knows it matches one row), or a one-row ``INSERT`` whose result nobody reads
        (``duplicate``: the refusal a duplicate key of its table is reported as, as the
        insert alone would have been): it goes in the same simple query as the next
        read, or as the ``COMMIT`` (its values bound by psycopg), in order, with no
        savepoint; it fails the transaction as it would have alone. ``False`` (nothing
        deferred: run it now) unless :attr:`row_locks`.
        """
        if not self.row_locks or "\x00" in sql:
            return False
        self._memo = None
        if duplicate is not None:
            table = _INSERT_INTO.match(sql)
            if table is None:
                return False
            self._refusals[table.group(1)] = duplicate
        self._late.append((translate(sql), _clean(args), False))
        return True

    def read_ahead(self, sql: str, args: Sequence[Any]) -> None:
        """Send the read ``sql`` with the transaction's first statement (one round trip).

        For a call that knows, before it runs, the read its handler makes right after the
        token re-check (``checkpoint``'s task, read ``FOR UPDATE``). Only a row-locking
        shared writer whose ``BEGIN`` has not been sent takes it: the read is then sent
        after the first statement, in its simple query (its own snapshot, taken after the
        first statement's), and its rows answer :meth:`execute` only if the very next
        statement the transaction runs is this one, with these values, so it reads what
        it would have read alone (nothing of the transaction ran in between). Otherwise
        they are dropped and the statement runs as usual.
        """
        if self.row_locks and self._begin and "\x00" not in sql:
            with contextlib.suppress(TaskError):  # a NUL: refused when the handler reads
                self._ahead = (translate(sql), _clean(args))

    def _failed(self, exc: psycopg.Error) -> BaseException:
        """``exc`` as the stores expect it; a deferred insert's duplicate as its refusal."""
        refusals, self._refusals = self._refusals, {}
        if isinstance(exc, pg_errors.UniqueViolation):
            refusal = refusals.get(exc.diag.table_name or "")
            if refusal is not None:
                return refusal
        return pg_error(exc)

    def _run_late(self) -> None:
        """Run deferred writes now (a statement came after them), in order.

        Plain writes (:meth:`defer_write`) go together in one simple query; an audit insert
        (:meth:`defer`) in its savepoint.
        """
        late, self._late = self._late, []
        plain: list[str] = []
        try:
            for query, values, savepoint in late:
                if not savepoint:
                    plain.append(_bind(self.raw, query, values))
                    continue
                if plain:
                    self._simple(plain)
                    plain = []
                self._insert(query, values)
            if plain:
                self._simple(plain)
        except psycopg.Error as exc:
            mapped = self._failed(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        self._refusals = {}

    def _simple(self, statements: list[str]) -> psycopg.Cursor[Any]:
        """Run bound ``statements`` as one simple query; the cursor is at the last result."""
        cur = self._cursor().execute("; ".join(statements), prepare=False)
        while cur.nextset():  # on to the last statement's result
            continue
        return cur

    def _read_after_late(self, query: str, args: Sequence[Any] | None) -> PgCursor:
        """A read sent with the plain writes deferred before it, in one simple query.

        Each statement of a simple query takes its own snapshot (``READ COMMITTED``), so
        the read sees the writes and every commit before it, as in two round trips.
        """
        late, self._late = self._late, []
        bound = [_bind(self.raw, q, v) for q, v, _ in late]
        bound.append(query if args is None else _bind(self.raw, query, args))
        read = self._simple_read(bound)
        self._refusals = {}
        return read

    def _simple_read(
        self, statements: list[str], ahead: tuple[str, list[Any] | None] | None = None
    ) -> PgCursor:
        """Run ``statements`` as one simple query; the rows of the last one (errors typed).

        With ``ahead`` (:meth:`read_ahead`) the last statement is that read: its rows are
        kept for :meth:`execute`, and the rows returned are the statement's before it.
        """
        try:
            cur = self._cursor().execute("; ".join(statements), prepare=False)
            for _ in range(len(statements) - (2 if ahead else 1)):
                cur.nextset()  # on to the statement's result
            rows, count = _rows(cur), max(cur.rowcount, 0)
            if ahead is not None and cur.nextset():
                self._memo = (*ahead, _rows(cur), max(cur.rowcount, 0))
        except psycopg.Error as exc:
            mapped = self._failed(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        self._changes = count
        return PgCursor(rows)

    def commit(self, tail: tuple[str, ...]) -> None:
        """End the transaction with ``tail`` (``COMMIT``, maybe a ``NOTIFY`` first).

        Deferred writes (and a ``BEGIN`` not yet sent) go in the same round trip: in one
        pipeline, or (unpipelined) in one simple query, each write in its savepoint with
        its values bound client-side (psycopg's literals).
        """
        if self._late:
            late, self._late = self._late, []
            self.start()
            bind = functools.partial(_bind, self.raw)
            writes = [
                f"{_SAVEPOINT}; {bind(q, v)}; {_RELEASE}" if savepoint else bind(q, v)
                for q, v, savepoint in late
            ]
            try:
                self._cursor().execute("; ".join((*writes, *tail)), prepare=False)
            except psycopg.Error as exc:
                refusal = self._failed(exc)
                if isinstance(refusal, TaskError):
                    raise refusal from None  # a deferred insert's duplicate (defer_write)
                raise
            return
        prefix = self._prefix()
        if not prefix:
            self._cursor().execute("; ".join(tail), prepare=False)
            return
        with self.raw.pipeline():
            for statement, args in prefix:
                self.raw.execute(statement, args, prepare=False)
            for statement in tail:
                self.raw.execute(statement, prepare=False)

    def execute(self, sql: str, args: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement (SQLite dialect); return its rows."""
        if "\x00" in sql:
            raise TaskError(ErrorCode.BAD_INPUT, "a statement holds a NUL character")
        args = _clean(args)
        query = translate(sql)
        self._rowid = None
        if self._memo is not None:
            memo, self._memo = self._memo, None
            if memo[0] == query and memo[1] == args:  # read with the first statement
                self._changes = memo[3]
                return PgCursor(memo[2])
        if not self._pipelined:
            if self._begin and _is_select(sql):
                return self._begin_with(query, args)
            self.start()
            if self._late:
                if _is_select(sql) and not any(sp for _, _, sp in self._late):
                    return self._read_after_late(query, args)
                self._run_late()
        guarded = None
        if _is_insert(sql) and self._facts is not None:
            guarded = guarded_insert(query, self._facts)
        try:
            if guarded is not None:
                return self._guarded(sql, guarded, args)
            if _is_insert(sql):
                cur = self._insert(query, args)
            elif self._begin or self._deferred:
                cur = self._with_prefix(query, args)
            else:
                cur = self._cursor().execute(query, args, prepare=None)
        except psycopg.Error as exc:
            mapped = pg_error(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        self._changes = max(cur.rowcount, 0)
        rows = _rows(cur)
        return PgCursor(rows)

    def _cursor(self) -> psycopg.Cursor[Any]:
        """The connection's one cursor for plain statements (each one's rows are copied out).

        Kept on the (pooled) connection: one cursor for every transaction it runs.
        """
        cur = self._cur
        if cur is None:
            cur = getattr(self.raw, _CURSOR_ATTR, None)
            if cur is None or cur.closed:
                cur = self.raw.cursor()
                setattr(self.raw, _CURSOR_ATTR, cur)
            self._cur = cur
        return cur

    def _begin_with(self, query: str, args: Sequence[Any] | None) -> PgCursor:
        """The transaction's first statement, a read, sent after its ``BEGIN`` statements.

        One simple query (one round trip; its values bound by psycopg, as :meth:`commit`'s).
        Each statement of a simple query takes its own snapshot, so the read sees every commit
        before the writer lock was granted, as when they went in two round trips.
        """
        begin, self._begin = self._begin, ()
        ahead, self._ahead = self._ahead, None
        if ahead == (query, args):
            ahead = None
        reads = [(query, args)] if ahead is None else [(query, args), ahead]
        bound = [_bind(self.raw, q, a) for q, a in reads]
        return self._simple_read([*begin, *bound], ahead)

    def _with_prefix(self, query: str, args: Sequence[Any] | None) -> psycopg.Cursor[Any]:
        """A statement sent with the ``BEGIN`` and deferred writes before it, in one round trip.

        Nothing in a pipeline is a prepared statement: a statement skipped after an error
        (the writer lock's timeout) would leave psycopg believing it prepared one the server
        never saw.
        """
        prefix = self._prefix()
        with self.raw.pipeline():
            for statement, values in prefix:
                self.raw.execute(statement, values, prepare=False)
            cur = self.raw.execute(query, args, prepare=False)
        return cur

    def _guarded(self, sql: str, guarded: tuple[str, bool], args: Sequence[Any] | None) -> PgCursor:
        query, returns_identity = guarded
        if self._begin or self._deferred:
            cur = self._with_prefix(query, args)
        else:
            # Not prepared, as no insert was before: with the audit insert prepared, a writer
            # whose first xid-taking statement it was broke the event log's horizon under
            # concurrent replicas (tests/replicas/test_events.py, the SIGKILL case).
            cur = self._cursor().execute(query, args, prepare=False)
        rows = _rows(cur)
        if cur.rowcount == 0:
            table = _INSERT_INTO.match(sql)
            raise apsw.ConstraintError(
                f"UNIQUE constraint failed: {table.group(1) if table else ''}"
            )
        self._changes = max(cur.rowcount, 0)
        if returns_identity:
            self._rowid = int(rows[0][0])
            return PgCursor([])
        return PgCursor(rows)

    def _insert(self, query: str, args: Sequence[Any] | None) -> psycopg.Cursor[Any]:
        """Run an INSERT inside a savepoint, sent in one round trip (pipeline mode).

        SQLite undoes a failed statement and keeps the transaction; PostgreSQL aborts the
        whole transaction. The stores (and their tests) go on after a refused insert (a
        duplicate, a missing parent row), so a failed insert is rolled back to its savepoint.
        """
        # Nothing in the pipeline is a prepared statement (see _with_prefix). The BEGIN goes
        # first, alone: a savepoint never set must not be rolled back to.
        self.start()
        try:
            with self.raw.pipeline():
                self.raw.execute(_SAVEPOINT, prepare=False)
                cur = self.raw.execute(query, args, prepare=False)
                self.raw.execute(_RELEASE, prepare=False)
        except psycopg.Error:
            self.raw.execute("ROLLBACK TO SAVEPOINT agent_task_insert", prepare=False)
            self.raw.execute(_RELEASE, prepare=False)
            raise
        return cur

    def changes(self) -> int:
        """Rows the last statement inserted, updated or deleted."""
        return self._changes

    def last_insert_rowid(self) -> int:
        """The identity the last insert assigned (returned with it, else ``lastval()``)."""
        if self._rowid is not None:
            return self._rowid
        row = self.raw.execute("SELECT lastval()").fetchone()
        assert row is not None
        return int(row[0])


_TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK


def _rows(cur: psycopg.Cursor[Any]) -> list[tuple[Any, ...]]:
    """The statement's rows (none for a command).

    ``cur.description``'s test, without the ``Column`` objects it builds (one per column,
    per statement: a task row has 30).
    """
    res = cur.pgresult
    if res is None or not (res.nfields or res.status == _TUPLES_OK):
        return []
    return cur.fetchall()


def _clean(args: Sequence[Any] | None) -> list[Any] | None:
    """Arguments as psycopg takes them: no NUL in a string, bytes for a memoryview."""
    if args is None:
        return None
    out = list(args)
    for i, value in enumerate(out):
        kind = type(value)
        if kind is int or value is None:
            continue
        if kind is str or isinstance(value, str):
            _no_nul(value)
        elif isinstance(value, memoryview):
            out[i] = bytes(value)
    return out


def _is_select(sql: str) -> bool:
    return sql.lstrip()[:6].upper() == "SELECT"


def _is_insert(sql: str) -> bool:
    return sql.lstrip()[:6].upper() == "INSERT"


def _no_nul(value: str) -> None:
    if "\x00" in value:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "a string holds a NUL character (U+0000), which PostgreSQL text cannot store",
        )
