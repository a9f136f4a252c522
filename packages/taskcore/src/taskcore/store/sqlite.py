"""SQLite databases on apsw: pragmas, forward migrations, serialized write transactions.

This module is the only place that knows how a SQLite file is opened. A database is a set of
*components*, each with its own forward-only list of migrations and its own recorded schema
version, so the journal, the queue, the authority and the done-gate index each own their
tables without editing each other's.

Guarantees (tested in ``tests/store/test_sqlite.py``):

* WAL journal, ``synchronous=FULL``: a committed write transaction is on disk when
  :meth:`SqliteDatabase.write` returns;
* writers take ``BEGIN IMMEDIATE`` and wait at most ``busy_timeout_ms``; contention past that
  is a ``BUSY`` error and nothing is retried or replayed;
* a missing database is created only when asked (``create=True``); read-only opens never
  create a file, run a migration or change the journal mode;
* the first writable open in a process runs ``PRAGMA quick_check`` and refuses a damaged file;
* a file whose recorded schema is newer than this code is refused, never downgraded;
* a full file system is ``STORAGE_FULL`` (with a retry time), never a traceback: the failed
  transaction is rolled back and the WAL is checkpointed and truncated on that pressure; while
  the file system is low on space (``JOURNAL_LOW_SPACE_BYTES``) every commit checkpoints, so
  the WAL never grows past what the database can absorb (SQLite would wait for 1000 pages,
  about 4 MiB, which a small volume never has), and after a checkpoint the WAL is kept below
  ``journal_size_limit``. So the journal recovers by itself once space is freed. An error
  opening the file names its real cause (full, unreadable, damaged) instead of calling every
  failure a damaged database.

>>> import tempfile, pathlib
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> notes = Component("notes", (Migration(1, "CREATE TABLE note(id INTEGER PRIMARY KEY, body TEXT)"),))
>>> db = SqliteDatabase(tmp / "x.sqlite", (notes,), create=True)
>>> with db.write() as conn:
...     _ = conn.execute("INSERT INTO note(body) VALUES (?)", ("hi",))
>>> with db.read() as conn:
...     conn.execute("SELECT body FROM note").fetchall()
[('hi',)]
>>> db.close()
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    JOURNAL_LOW_SPACE_BYTES,
    JOURNAL_SIZE_LIMIT_BYTES,
    RETRY_AFTER_STORAGE_FULL_SECONDS,
)

__all__ = [
    "Component",
    "Migration",
    "SqliteDatabase",
    "free_bytes",
    "opt_int",
    "opt_str",
    "storage_error",
]

# Below this many free bytes an I/O error is reported as a full file system (ours: the
# largest SQLite page plus the shared-memory index's first block).
_NEARLY_FULL_BYTES = 128 * 1024
# SQLite's own auto-checkpoint threshold (the WAL hook below replaces it), and the WAL size
# from which a commit checks the free space (pages).
_AUTOCHECKPOINT_PAGES = 1000
_PRESSURE_PAGES = 16

_CHECKED_PATHS: set[str] = set()
_CHECKED_LOCK = threading.Lock()


def opt_int(value: Any) -> int | None:
    """Read a nullable INTEGER column."""
    return None if value is None else int(value)


def opt_str(value: Any) -> str | None:
    """Read a nullable TEXT column."""
    return None if value is None else str(value)


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the file system holding ``path``."""
    return _free_in(path if path.is_dir() else path.parent)


def _free_in(directory: Path) -> int | None:
    try:
        st = os.statvfs(directory)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _full(path: Path) -> TaskError:
    free = free_bytes(path)
    shown = "" if free is None else f" ({free} bytes free)"
    return TaskError(
        ErrorCode.STORAGE_FULL,
        f"the file system holding the journal is full{shown}; nothing was written. Free space "
        "on it and retry (a running service recovers by itself)",
        retry_after=RETRY_AFTER_STORAGE_FULL_SECONDS,
    )


def storage_error(exc: BaseException, path: Path) -> TaskError | None:
    """Return the typed error naming the real cause of an apsw error, or ``None``.

    ``None`` means the error is not about the storage medium (a constraint, a misuse) and
    stays a bug for the caller to report. A full file system is ``STORAGE_FULL`` even when
    SQLite only says "disk I/O error" (it does when growing the WAL index fails).

    >>> storage_error(apsw.FullError("database or disk is full"), Path(".")).code.value
    'STORAGE_FULL'
    >>> storage_error(apsw.ConstraintError("UNIQUE"), Path(".")) is None
    True
    """
    if isinstance(exc, apsw.FullError):
        return _full(path)
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return TaskError(ErrorCode.BUSY, "the journal is busy; retry the same request shortly")
    if isinstance(exc, apsw.IOError | apsw.CantOpenError | apsw.ReadOnlyError):
        free = free_bytes(path)
        if free is not None and free < _NEARLY_FULL_BYTES:
            return _full(path)
        return TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"the journal cannot be read or written ({type(exc).__name__}); check the disk, "
            "the data directory's permissions and the service log, then retry",
        )
    if isinstance(exc, apsw.NotADBError | apsw.CorruptError):
        return TaskError(
            ErrorCode.INTEGRITY_FAILURE,
            "the file is not a readable database; restore it from a backup",
        )
    return None


@attrs.frozen
class Migration:
    """One forward step of a component's schema: ``version`` is 1, 2, 3... in order."""

    version: int
    sql: str


@attrs.frozen
class Component:
    """A named set of tables with its own migration history."""

    name: str
    migrations: tuple[Migration, ...]

    @property
    def latest(self) -> int:
        """The schema version this code writes."""
        return max((m.version for m in self.migrations), default=0)


_META = """
CREATE TABLE IF NOT EXISTS schema_versions (
    component TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) STRICT
"""


class SqliteDatabase:
    """One SQLite file, one connection per thread, explicit transactions.

    ``write()`` yields a connection inside ``BEGIN IMMEDIATE`` and commits on a clean exit
    (rolls back on any exception); ``read()`` yields one inside a deferred transaction, so all
    reads see one snapshot.
    """

    def __init__(
        self,
        path: Path | str,
        components: Sequence[Component],
        *,
        create: bool = False,
        readonly: bool = False,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        self.path = Path(path)
        self.components = tuple(components)
        self.readonly = readonly
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._space_read_at = 0  # WAL pages when the free space was last read
        self._space_probe = self.path.parent  # the directory holding the journal file
        self._all: list[apsw.Connection] = []
        self._all_lock = threading.Lock()
        if not self.path.exists():
            if not create or readonly:
                raise TaskError(
                    ErrorCode.NOT_FOUND,
                    f"there is no journal in {str(self.path.parent)[:512]}; give the "
                    "service's data dir (--data-dir or AGENT_TASK_DATA_DIR), or start "
                    "'agent-task serve' there first",
                )
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        conn = self._connection()
        if not readonly:
            self._check_once(conn)
            self._migrate(conn)
        else:
            self._check_versions(conn)

    # -- connections ----------------------------------------------------------------------
    def _open(self) -> apsw.Connection:
        if self.readonly:
            flags = apsw.SQLITE_OPEN_READONLY
        else:
            flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        try:
            conn = apsw.Connection(str(self.path), flags=flags)
        except apsw.Error as exc:
            raise storage_error(exc, self.path) or TaskError(
                ErrorCode.STORAGE_UNAVAILABLE, f"cannot open the database ({type(exc).__name__})"
            ) from None
        conn.set_busy_timeout(self.busy_timeout_ms)
        try:
            if not self.readonly:
                if os.stat(self.path).st_size == 0:
                    os.chmod(self.path, 0o600)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                # A checkpointed WAL is truncated to this size instead of keeping its peak.
                conn.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT_BYTES}")
                conn.set_wal_hook(self._wal_hook)
            conn.execute("PRAGMA foreign_keys=ON")
        except apsw.Error as exc:
            conn.close()
            raise storage_error(exc, self.path) or TaskError(
                ErrorCode.STORAGE_UNAVAILABLE,
                f"cannot prepare the database ({type(exc).__name__}); see the service log",
            ) from None
        return conn

    def _connection(self) -> apsw.Connection:
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    def open_connection(self) -> apsw.Connection:
        """A new connection of this database's own (not the thread's), closed by :meth:`close`.

        The group-commit writer (:mod:`taskcore.store.groupcommit`) holds one for every thread.
        """
        if self.readonly:
            raise TaskError(ErrorCode.INTERNAL, "this database was opened read-only")
        conn = self._open()
        with self._all_lock:
            self._all.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection this object opened (in any thread).

        A connection another thread is still using (a call that outlived its caller, such as
        a tool call past its time limit, finishing its statement or commit) is closed once
        that thread leaves it, waiting at most ``busy_timeout_ms``; past that, apsw's
        ``ThreadingViolationError`` is raised as before.
        """
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        with self._all_lock:
            for conn in self._all:
                while True:
                    try:
                        conn.close()
                        break
                    except apsw.ThreadingViolationError:
                        if time.monotonic() >= deadline:
                            raise
                        time.sleep(0.001)
            self._all.clear()
        self._local = threading.local()

    # -- integrity and migrations -----------------------------------------------------------
    def _check_once(self, conn: apsw.Connection) -> None:
        key = str(self.path.resolve())
        with _CHECKED_LOCK:
            if key in _CHECKED_PATHS:
                return
            try:
                rows = conn.execute("PRAGMA quick_check").fetchall()
            except (apsw.NotADBError, apsw.CorruptError):
                rows = [("unreadable",)]
            except apsw.Error as exc:
                # Full, unreadable or busy: say so; integrity was not what failed.
                raise storage_error(exc, self.path) or TaskError(
                    ErrorCode.STORAGE_UNAVAILABLE,
                    f"cannot check the database ({type(exc).__name__}); see the service log",
                ) from None
            if rows != [("ok",)]:
                raise TaskError(
                    ErrorCode.INTEGRITY_FAILURE,
                    "the database failed its integrity check; restore it from a backup",
                )
            _CHECKED_PATHS.add(key)

    def _versions(self, conn: apsw.Connection) -> dict[str, int]:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_versions'"
        ).fetchall()
        if not exists:
            return {}
        return {str(name): int(v) for name, v in conn.execute("SELECT * FROM schema_versions")}

    def _check_versions(self, conn: apsw.Connection) -> None:
        versions = self._versions(conn)
        for component in self.components:
            have = versions.get(component.name, 0)
            if have != component.latest:
                raise TaskError(
                    ErrorCode.STORAGE_UNAVAILABLE,
                    f"the {component.name} schema is at version {have}, this code reads "
                    f"version {component.latest}; upgrade by starting the service once",
                )

    def _migrate(self, conn: apsw.Connection) -> None:
        with self._transaction(conn, "BEGIN IMMEDIATE"):
            conn.execute(_META)
            versions = self._versions(conn)
            for component in self.components:
                have = versions.get(component.name, 0)
                if have > component.latest:
                    raise TaskError(
                        ErrorCode.STORAGE_UNAVAILABLE,
                        f"the {component.name} schema (version {have}) is newer than this "
                        f"code (version {component.latest}); run the newer release",
                    )
                for migration in sorted(component.migrations, key=lambda m: m.version):
                    if migration.version > have:
                        conn.execute(migration.sql)
                        have = migration.version
                conn.execute(
                    "INSERT INTO schema_versions(component, version) VALUES (?, ?) "
                    "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                    (component.name, have),
                )

    # -- transactions ---------------------------------------------------------------------
    def _wal_hook(self, conn: apsw.Connection, name: str, pages: int) -> int:
        """After each commit: checkpoint at 1000 pages, or at once when space runs low.

        The free space is read (one ``statvfs``) each time the WAL has grown by another
        ``_PRESSURE_PAGES`` pages since the last reading, not after every commit.
        """
        if pages >= _AUTOCHECKPOINT_PAGES:
            checkpoint = True
        elif pages >= _PRESSURE_PAGES and not (
            self._space_read_at <= pages < self._space_read_at + _PRESSURE_PAGES
        ):
            self._space_read_at = pages
            free = _free_in(self._space_probe)
            checkpoint = free is not None and free < JOURNAL_LOW_SPACE_BYTES
        else:
            checkpoint = False
        if checkpoint:
            with contextlib.suppress(apsw.Error):
                conn.wal_checkpoint(name, apsw.SQLITE_CHECKPOINT_PASSIVE)
        return int(apsw.SQLITE_OK)

    @staticmethod
    def rollback(conn: apsw.Connection) -> None:
        """Roll back ``conn``'s transaction, if any; never raises (the last-resort path)."""
        SqliteDatabase._rollback(conn)

    @staticmethod
    def _rollback(conn: apsw.Connection) -> None:
        # The last-resort path: a rollback that fails (the file vanished, the disk is gone)
        # must not replace the error being reported. SQLite may already have rolled back.
        try:
            if not conn.get_autocommit():
                conn.execute("ROLLBACK")
        except apsw.Error:
            pass

    def _relieve(self, conn: apsw.Connection) -> None:
        """Checkpoint and truncate the WAL after a write met a full file system.

        SQLite checkpoints on its own only when the WAL passes 1000 pages (about 4 MiB); on a
        small volume it never gets there, and a WAL that cannot grow blocks every write even
        after space is freed. Copying it into the database and truncating it gives the space
        back as soon as there is room to copy. Failing here changes nothing; the next write
        that meets a full disk tries again.
        """
        with contextlib.suppress(apsw.Error):
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def typed_error(self, conn: apsw.Connection, exc: apsw.Error) -> TaskError | None:
        """The typed error of ``exc`` (:func:`storage_error`), relieving a full file system."""
        return self._typed(conn, exc)

    def _typed(self, conn: apsw.Connection, exc: apsw.Error) -> TaskError | None:
        err = storage_error(exc, self.path)
        if err is not None and err.code is ErrorCode.STORAGE_FULL:
            self._relieve(conn)
        return err

    @contextmanager
    def _transaction(self, conn: apsw.Connection, begin: str) -> Iterator[apsw.Connection]:
        if not conn.get_autocommit():
            raise TaskError(ErrorCode.INTERNAL, "nested transactions are not supported")
        try:
            conn.execute(begin)
        except apsw.Error as exc:
            self._rollback(conn)
            raise self._typed(conn, exc) or TaskError(
                ErrorCode.STORAGE_UNAVAILABLE, f"cannot start a transaction ({type(exc).__name__})"
            ) from None
        try:
            yield conn
        except OverflowError:
            # SQLite integers are signed 64-bit; the contract's are unsigned 64-bit. A value
            # above 2^63-1 cannot be stored or matched, so it is refused as out of bounds
            # (a PostgreSQL bigint has the same range).
            self._rollback(conn)
            raise TaskError(
                ErrorCode.OUT_OF_BOUNDS,
                "an integer is above 2^63-1, the largest value storage can hold; send a "
                "smaller value",
            ) from None
        except apsw.Error as exc:
            self._rollback(conn)
            typed = self._typed(conn, exc)
            if typed is None:
                raise
            raise typed from None
        except BaseException:
            self._rollback(conn)
            raise
        try:
            conn.execute("COMMIT")
        except apsw.Error as exc:
            self._rollback(conn)
            raise self._typed(conn, exc) or TaskError(
                ErrorCode.STORAGE_UNAVAILABLE,
                f"the transaction could not commit ({type(exc).__name__}); nothing was written",
            ) from None

    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """Yield a connection inside ``BEGIN IMMEDIATE``; commit durably on a clean exit."""
        if self.readonly:
            raise TaskError(ErrorCode.INTERNAL, "this database was opened read-only")
        conn = self._connection()
        with self._transaction(conn, "BEGIN IMMEDIATE"):
            yield conn

    @contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """Yield a connection inside a deferred transaction (one consistent snapshot)."""
        conn = self._connection()
        with self._transaction(conn, "BEGIN"):
            yield conn

    def ping(self) -> None:
        """Run a trivial query; raise ``STORAGE_UNAVAILABLE`` if the file cannot answer."""
        try:
            self._connection().execute("SELECT 1").fetchall()
        except apsw.Error:
            raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "storage does not answer") from None
