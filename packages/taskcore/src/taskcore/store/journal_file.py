"""The journal as a whole: who holds it, a consistent copy of it, and what it holds.

What ``agent-task db backup``, ``db restore`` and ``db verify`` stand on
(:mod:`taskcore.dbadmin` decides; this module knows files, locks and SQL):

* **Who holds the journal.** Every process that opens the SQLite journal of a data directory
  (``agent-task serve``, every ``agent-task`` command on it) holds a shared ``flock`` on
  ``DATA_DIR/journal.lock`` while it has the journal open (:func:`hold_shared`); a restore
  takes it exclusively, without waiting (:func:`hold_exclusive`), so it is refused while any
  of them runs, and none of them can open the journal while a restore replaces it. A
  read-only open never creates the lock file (it takes the lock only if the file is there).
  The lock is a separate file: a descriptor opened and closed on ``journal.sqlite`` itself
  would drop SQLite's own POSIX locks in that process.
* **A consistent copy** (:func:`copy_sqlite`): SQLite's online backup API, all pages in one
  step, inside one read transaction of the source, so the copy is the journal as of one
  commit while writers go on (WAL: readers never block them). The copy is switched to the
  rollback journal mode: one self-contained file, no ``-wal`` beside it.
* **What a journal holds** (:func:`inspect_sqlite`, :func:`inspect_postgres`): the recorded
  schema versions, every table's row count, the audit events' sequence, and what the
  database itself can check (SQLite's ``integrity_check`` and ``foreign_key_check``;
  PostgreSQL's sequences against the rows that use them).

>>> import tempfile, pathlib
>>> from taskcore.store.storage import open_storage
>>> data = pathlib.Path(tempfile.mkdtemp()) / "data"
>>> open_storage(data, create=True, database="").close()
>>> facts = inspect_sqlite(data / "journal.sqlite")
>>> facts.integrity, facts.counts["audit_event"], facts.versions["queue"] >= 1
(['ok'], 0, True)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import attrs

from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "JOURNAL_LOCK_NAME",
    "AuditFacts",
    "JournalFacts",
    "copy_sqlite",
    "hold_exclusive",
    "hold_shared",
    "inspect_postgres",
    "inspect_sqlite",
    "release",
]

JOURNAL_LOCK_NAME = "journal.lock"
"""The file in the data directory whose ``flock`` says who holds the journal."""

_HEX64 = re.compile(r"[0-9a-f]{64}")


def hold_shared(data_dir: Path, *, create: bool) -> int | None:
    """Take the shared hold on ``data_dir``'s journal; return the descriptor to release.

    ``create=False`` (a read-only open) takes it only if the lock file exists. ``None``: no
    hold (the file could not be opened, e.g. a read-only data directory, which nothing can
    restore into either). A restore in progress is ``JOURNAL_IN_USE``.
    """
    flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        fd = os.open(data_dir / JOURNAL_LOCK_NAME, flags, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise TaskError(
            ErrorCode.JOURNAL_IN_USE,
            f"a restore is replacing the journal in {str(data_dir)[:512]}; start again when "
            "'agent-task db restore' has finished",
        ) from None
    return fd


def hold_exclusive(data_dir: Path) -> int:
    """Take the exclusive hold (a restore); ``JOURNAL_IN_USE`` while anyone holds the journal."""
    try:
        fd = os.open(data_dir / JOURNAL_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"cannot open {JOURNAL_LOCK_NAME} in the data directory ({exc.strerror}); check "
            "its permissions",
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise TaskError(
            ErrorCode.JOURNAL_IN_USE,
            f"a running service (or another agent-task command) holds the journal in "
            f"{str(data_dir)[:512]}; stop it (e.g. 'systemctl stop agent-task') and run the "
            "restore again",
        ) from None
    return fd


def release(fd: int | None) -> None:
    """Give a hold back (closing the descriptor drops the ``flock``)."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


@attrs.frozen(kw_only=True)
class AuditFacts:
    """The audit events' sequence and what can be checked of it."""

    events: int
    first_seq: int | None
    last_seq: int | None
    malformed: int
    """Rows whose digest is not 64 lowercase hex, or whose calls, time or names are empty."""


@attrs.frozen(kw_only=True)
class JournalFacts:
    """What a journal holds, read in one snapshot."""

    versions: dict[str, int]
    counts: dict[str, int]
    audit: AuditFacts
    integrity: list[str]
    """SQLite's ``integrity_check`` lines (``["ok"]`` when sound); ``[]`` on PostgreSQL."""
    foreign_keys: int
    """Rows whose reference has no target (SQLite's ``foreign_key_check``)."""
    sequences: dict[str, tuple[int, int]] = attrs.field(factory=dict)
    """PostgreSQL: per column fed by a sequence, (its last value, the column's max)."""


def _audit(rows: list[tuple[Any, ...]], head: tuple[Any, ...]) -> AuditFacts:
    count, first, last = head
    malformed = sum(
        1
        for digest, calls, at_ms, operation, outcome in rows
        if not (isinstance(digest, str) and _HEX64.fullmatch(digest))
        or int(calls) < 1
        or int(at_ms) <= 0
        or not operation
        or not outcome
    )
    return AuditFacts(
        events=int(count),
        first_seq=None if first is None else int(first),
        last_seq=None if last is None else int(last),
        malformed=malformed,
    )


_AUDIT_HEAD = "SELECT count(*), min(seq), max(seq) FROM audit_event"
_AUDIT_ROWS = "SELECT input_digest, calls, at_ms, operation, outcome FROM audit_event"


def _one(conn: apsw.Connection, sql: str) -> tuple[Any, ...]:
    row = conn.execute(sql).fetchone()
    if row is None:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "an aggregate query returned no row")
    return tuple(row)


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[apsw.Connection]:
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        raise TaskError(
            ErrorCode.INTEGRITY_FAILURE,
            f"{str(path)[:512]} cannot be opened as a journal ({type(exc).__name__})",
        ) from None
    conn.set_busy_timeout(10_000)
    try:
        yield conn
    finally:
        conn.close()


def inspect_sqlite(path: Path, *, full: bool = True) -> JournalFacts:
    """Read a SQLite journal file (read-only): versions, counts, audit, integrity.

    ``full=False`` runs ``quick_check`` instead of ``integrity_check``. A file that is not a
    SQLite database, or has no ``schema_versions`` table, is ``INTEGRITY_FAILURE``.
    """
    with _read_only(path) as conn:
        try:
            conn.execute("BEGIN")
            check = "integrity_check" if full else "quick_check"
            integrity = [str(r[0]) for r in conn.execute(f"PRAGMA {check}")]
            tables = [
                str(r[0])
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%' ORDER BY name"
                )
            ]
            if "schema_versions" not in tables or "audit_event" not in tables:
                raise TaskError(
                    ErrorCode.INTEGRITY_FAILURE,
                    f"{str(path)[:512]} is a SQLite database but not an agent-task journal "
                    "(no schema_versions or audit_event table)",
                )
            versions = {str(c): int(v) for c, v in conn.execute("SELECT * FROM schema_versions")}
            counts = {
                t: int(_one(conn, f'SELECT count(*) FROM "{t}"')[0])  # noqa: S608 - names from sqlite_master
                for t in tables
            }
            audit = _audit(conn.execute(_AUDIT_ROWS).fetchall(), _one(conn, _AUDIT_HEAD))
            foreign = len(conn.execute("PRAGMA foreign_key_check").fetchall())
            conn.execute("COMMIT")
        except (apsw.NotADBError, apsw.CorruptError):
            raise TaskError(
                ErrorCode.INTEGRITY_FAILURE,
                f"{str(path)[:512]} is not a readable SQLite database",
            ) from None
    return JournalFacts(
        versions=versions, counts=counts, audit=audit, integrity=integrity, foreign_keys=foreign
    )


_PG_TABLES = (
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
    "AND table_type = 'BASE TABLE' ORDER BY table_name"
)
# Each column whose default draws from a sequence, or an identity column's own sequence.
_PG_SEQUENCES = (
    "SELECT c.relname, a.attname, s.relname FROM pg_depend d "
    "JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S' "
    "JOIN pg_class c ON c.oid = d.refobjid "
    "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.refobjsubid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema() "
    "WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass "
    "ORDER BY c.relname, a.attname"
)


def inspect_postgres(url: str) -> JournalFacts:
    """Read a PostgreSQL journal in one repeatable-read snapshot.

    Versions, counts, audit, and each sequence's last value against the largest value of
    the column it feeds.

    A database without ``schema_versions`` is ``INTEGRITY_FAILURE``; one that cannot be
    reached is ``STORAGE_UNAVAILABLE``.
    """
    import psycopg

    from taskcore.store.postgres.storage import redact, split_url

    conninfo, _ = split_url(url)
    try:
        conn = psycopg.connect(conninfo, connect_timeout=10)
    except psycopg.Error as exc:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"cannot reach the database {redact(url)} ({type(exc).__name__})",
        ) from None
    with conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        tables = [str(r[0]) for r in conn.execute(_PG_TABLES)]
        if "schema_versions" not in tables or "audit_event" not in tables:
            raise TaskError(
                ErrorCode.INTEGRITY_FAILURE,
                f"the database {redact(url)} is not an agent-task journal (no "
                "schema_versions or audit_event table)",
            )
        versions = {str(c): int(v) for c, v in conn.execute("SELECT * FROM schema_versions")}
        counts = {}
        for table in tables:
            row = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()  # noqa: S608 - names from the catalogue
            counts[table] = int(row[0]) if row else 0
        head = conn.execute(_AUDIT_HEAD).fetchone() or (0, None, None)
        audit = _audit(conn.execute(_AUDIT_ROWS).fetchall(), tuple(head))
        sequences: dict[str, tuple[int, int]] = {}
        for table, column, sequence in conn.execute(_PG_SEQUENCES).fetchall():
            last = conn.execute(
                f'SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM "{sequence}"'  # noqa: S608 - catalogue names
            ).fetchone()
            top = conn.execute(f'SELECT coalesce(max("{column}"), 0) FROM "{table}"').fetchone()  # noqa: S608 - catalogue names
            sequences[f"{table}.{column}"] = (
                int(last[0]) if last else 0,
                int(top[0]) if top else 0,
            )
    return JournalFacts(
        versions=versions,
        counts=counts,
        audit=audit,
        integrity=[],
        foreign_keys=0,
        sequences=sequences,
    )


def copy_sqlite(journal: Path, target: Path, *, busy_timeout_ms: int = 10_000) -> None:
    """Copy the live journal into the new file ``target`` as of one commit, and fsync it.

    The copy is in the rollback journal mode (one file; the service switches it back to
    WAL when it opens it). ``target`` must not exist.
    """
    try:
        source = apsw.Connection(str(journal), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"cannot open the journal to copy it ({type(exc).__name__})",
        ) from None
    source.set_busy_timeout(busy_timeout_ms)
    try:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        dest = apsw.Connection(str(target), flags=flags)
        try:
            with dest.backup("main", source, "main") as backup:
                backup.step(-1)  # every page in one step: one read transaction of the source
            dest.execute("PRAGMA journal_mode=DELETE")
        finally:
            dest.close()
    except apsw.Error as exc:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"the copy failed ({type(exc).__name__}: {exc}); nothing was kept",
        ) from None
    finally:
        source.close()
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
