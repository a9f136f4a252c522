"""Group commit: one writer connection per journal, concurrent calls share one fsync.

SQLite admits one writer at a time and, at ``synchronous=FULL``, every ``COMMIT`` waits for
an fsync. When several threads of one process write at once, most of their time is spent
queued behind each other's fsyncs. :class:`GroupCommit` lets them share one:

* the threads take turns on one connection; the first opens a write transaction
  (``BEGIN IMMEDIATE``) and every call runs inside its own ``SAVEPOINT`` in it;
* a call that succeeds releases its savepoint and, if other calls are waiting for a turn
  (and the batch is not full), hands the connection to the next one and waits; otherwise it
  commits the batch: one ``COMMIT``, one fsync for every call in it;
* a caller's ``write()`` block returns only once the ``COMMIT`` covering its savepoint has
  returned *and* the WAL file has been flushed to disk (``fdatasync``), so an acknowledged
  call is durable exactly as at ``synchronous=FULL``. The flush runs after ``COMMIT`` has
  released SQLite's write lock (the writer connection commits at ``synchronous=NORMAL``,
  which writes the WAL frames without waiting for the disk): the lock is held for the calls'
  statements and the WAL write, not the 1-2 ms of the fsync, so another process's writer
  (``serve --workers N``) and this process's next batch run while it flushes (see
  :class:`_WalFlush` for why a flush after the commit is as durable as one inside it);
* a call that fails rolls back its own savepoint only and gets its own error at once; the
  calls before and after it in the batch are unaffected. If SQLite itself abandoned the
  transaction (a full disk, an I/O error), or the ``COMMIT`` fails, every call of the batch
  gets the typed error and none of them was applied.

What changes is only *when* a commit becomes visible: other connections may read a batch
for the milliseconds between its ``COMMIT`` and its flush, before any of its callers is
answered. Their own writes land after it in the WAL, so they are durable only with it; only a
bare read's answer could show a batch that a power loss in that window then undoes (every call
through the front door is a write transaction, and answers after its own flush).

A call waits for its turn at most ``busy_timeout_ms`` (then ``BUSY``, as a writer waiting for
SQLite's own lock would be told); once in a batch it waits for the batch's commit however long
that takes, since its answer depends on it.

A call's reads inside its block see the writes of the calls before it in the same batch; that
is the order they commit in, so the outcome is the one serial transactions would have had.
Readers on other connections see a batch only once it has committed.

>>> import tempfile, pathlib
>>> from taskcore.store.sqlite import Component, Migration, SqliteDatabase
>>> notes = Component("notes", (Migration(1, "CREATE TABLE note(id INTEGER PRIMARY KEY)"),))
>>> db = SqliteDatabase(pathlib.Path(tempfile.mkdtemp()) / "x.sqlite", (notes,), create=True)
>>> writer = GroupCommit(db)
>>> with writer.write() as conn:
...     _ = conn.execute("INSERT INTO note(id) VALUES (1)")
>>> writer.stats()
(1, 1)
>>> db.close()
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import apsw

from taskcore.errors import ErrorCode, TaskError

if TYPE_CHECKING:
    from taskcore.store.sqlite import SqliteDatabase

__all__ = ["MAX_BATCH_CALLS", "GroupCommit", "wal_path"]

MAX_BATCH_CALLS = 64
"""At most this many calls share one ``COMMIT`` (so a steady stream still commits)."""

_SAVEPOINT = "group_call"


class _Batch:
    """One shared write transaction: how many calls it holds and how it ended."""

    __slots__ = ("calls", "done", "error")

    def __init__(self) -> None:
        self.calls = 0
        """Calls whose savepoint was released into this transaction (awaiting the commit)."""
        self.done = False
        self.error: TaskError | None = None


class _BusyWait:
    """The writer connection's wait for another process's write lock: short, frequent looks.

    SQLite's own busy timeout sleeps 1, 2, 5, 10 ... up to 100 ms between looks, fine for a
    lock held seconds, ruinous when the other writer is another worker of the same server
    (``serve --workers N``) holding it for a commit of about a millisecond: the waiter slept
    through many of them. This looks every :data:`BUSY_LOOK_MAX_S` at most (sooner at first)
    and gives up after the same ``busy_timeout_ms`` (then ``BUSY``, as before).
    """

    __slots__ = ("_since", "_timeout_s")

    def __init__(self, timeout_ms: int) -> None:
        self._timeout_s = timeout_ms / 1000
        self._since = 0.0

    def __call__(self, count: int) -> bool:
        now = time.monotonic()
        if count == 0:
            self._since = now
        elif now - self._since >= self._timeout_s:
            return False
        time.sleep(min(BUSY_LOOK_MAX_S, 0.0001 * (1 << min(count, 4))))
        return True


BUSY_LOOK_MAX_S = 0.001
"""The longest the writer sleeps between looks at another process's write lock (ours)."""


_fdatasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


def wal_path(db: SqliteDatabase) -> str:
    """The database's write-ahead log (SQLite names it after the database file)."""
    return f"{db.path}-wal"


class _WalFlush:
    """Flush the WAL to disk after a ``COMMIT`` made at ``synchronous=NORMAL``.

    At ``NORMAL`` in WAL mode SQLite writes a commit's frames to the WAL and returns without
    waiting for the disk; everything else it syncs as at ``FULL`` (the WAL before a checkpoint
    copies it, the database after, a restarted WAL's header). So a commit is durable once the
    WAL's data reach the disk, which is what this ``fdatasync`` does, on the file as it is
    now: it holds this commit's frames (an ``fdatasync`` covers every byte written to the
    file before it, by any process), unless a checkpoint already copied them into the
    database, which it syncs before the WAL is reused.

    The WAL is opened once and kept open until :meth:`close`: SQLite truncates it in place and
    never replaces it while this writer's connection is open (it is deleted only when the last
    connection closes); were it replaced all the same (another inode under the name), the new
    one is opened. Only the WAL is ever opened here, never the database file: closing a
    descriptor of a file drops every POSIX lock this process holds on it, and SQLite holds
    its locks on the database file (and the ``-shm`` file), none on the WAL.
    """

    __slots__ = ("_closed", "_fd", "_lock", "_stale", "_users", "_wal")

    def __init__(self, db: SqliteDatabase) -> None:
        self._wal = wal_path(db)
        self._fd: int | None = None
        self._stale: list[int] = []  # replaced descriptors another flush may still be using
        self._users = 0  # flushes running now (a descriptor is closed only when none is)
        self._closed = False
        self._lock = threading.Lock()

    def _acquire(self) -> int:
        with self._lock:
            fd = self._fd
            if fd is None or os.fstat(fd).st_ino != os.stat(self._wal).st_ino:
                if fd is not None:
                    self._stale.append(fd)  # closed once no flush is using it
                fd = self._fd = os.open(self._wal, os.O_RDONLY | os.O_CLOEXEC)
            self._users += 1
            return fd

    def _release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self._close_unused()

    def _close_unused(self) -> None:
        # Under the lock, with no flush running: the replaced descriptors, and after close()
        # the current one too.
        stale, self._stale = self._stale, []
        if self._closed and self._fd is not None:
            stale.append(self._fd)
            self._fd = None
        for fd in stale:
            os.close(fd)

    def __call__(self) -> None:
        if self._closed:
            # A straggler (a call that outlived its caller) committing after close(): flush
            # through a descriptor of its own.
            fd = os.open(self._wal, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _fdatasync(fd)
            finally:
                os.close(fd)
            return
        fd = self._acquire()
        try:
            _fdatasync(fd)
        finally:
            self._release()

    def close(self) -> None:
        """Close the WAL's descriptors (the writer is done).

        A flush running now keeps its descriptor until it returns; the last one closes it.
        """
        with self._lock:
            self._closed = True
            if self._users == 0:
                self._close_unused()


_NOT_FLUSHED = (
    "the journal committed this call but could not flush it to disk ({what}); it may be "
    "lost if the machine stops now. Check the disk, then read the state before retrying"
)


class GroupCommit:
    """The write side of one journal in one process (see the module docstring)."""

    def __init__(self, db: SqliteDatabase, *, max_batch: int = MAX_BATCH_CALLS) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._db = db
        self._max_batch = max_batch
        self._cond = threading.Condition(threading.Lock())
        self._conn: apsw.Connection | None = None
        self._busy = False  # a call or a commit holds the connection
        self._owner: int | None = None  # the thread whose call holds it
        self._queue: deque[object] = deque()  # calls waiting for a turn, in arrival order
        self._batch: _Batch | None = None  # the open transaction, if any
        self._batches = 0
        self._calls = 0
        self._flush = _WalFlush(db)

    @property
    def db(self) -> SqliteDatabase:
        """The database this writer commits to."""
        return self._db

    def waiting(self) -> int:
        """How many calls are queued for a turn right now."""
        with self._cond:
            return len(self._queue)

    def stats(self) -> tuple[int, int]:
        """``(commits, calls committed)`` so far: calls per fsync is their ratio."""
        with self._cond:
            return self._batches, self._calls

    def close(self) -> None:
        """Forget the writer connection (the database closes it with the others)."""
        with self._cond:
            self._conn = None
            # A flush running now keeps the old descriptor until it returns; a write after
            # this (a closed writer is used again) opens the WAL anew.
            flush, self._flush = self._flush, _WalFlush(self._db)
        flush.close()

    # -- one call ---------------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """Run the block in its own savepoint of the shared transaction; return once durable.

        Raises what the block raised (its savepoint rolled back), or the typed storage error
        that ended the batch (nothing of the batch was applied).
        """
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                raise TaskError(ErrorCode.INTERNAL, "nested transactions are not supported")
            ticket = object()
            self._queue.append(ticket)  # turns are taken in arrival order
            took = False
            try:
                # As long as a writer would wait for SQLite's lock (``busy_timeout_ms``).
                deadline = time.monotonic() + self._db.busy_timeout_ms / 1000
                while self._busy or self._queue[0] is not ticket:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TaskError(
                            ErrorCode.BUSY, "the journal is busy; retry the same request shortly"
                        )
                    self._cond.wait(left)
                took = True
            finally:
                self._queue.remove(ticket)
                if not took:
                    self._cond.notify_all()  # the next in line may be waiting on this one
            self._busy = True
            self._owner = me
        try:
            conn, batch = self._begin()
        except BaseException:
            self._release()
            raise
        # The first call of a batch needs no savepoint: if it fails, the whole transaction
        # (holding nothing else) is rolled back. Later calls must not undo earlier ones.
        savepoint = batch.calls > 0
        failure: BaseException | None = None
        if savepoint:
            try:
                conn.execute(f"SAVEPOINT {_SAVEPOINT}")
            except apsw.Error as exc:
                failure = exc
        if failure is None:
            try:
                yield conn
            except BaseException as exc:  # rolled back below, then raised unchanged or typed
                failure = exc
        if savepoint:
            alive = self._end_call(conn, failure is None)
        elif failure is not None:
            self._db.rollback(conn)
            alive = False
        else:
            alive = not conn.get_autocommit()
        if failure is None and alive:
            batch.calls += 1
        if not alive and batch.error is None and (batch.calls or failure is None):
            # Calls already in the batch (or this one, which succeeded) were lost with it.
            reason = failure if isinstance(failure, apsw.Error) else None
            batch.error = self._typed(
                conn,
                reason,
                "the journal gave up the transaction this call shared with others; nothing of "
                "it was written. Retry the same request",
            )
        self._finish_turn(conn, batch, wait=failure is None)
        if failure is not None:
            raised = self._as_raised(conn, failure)
            if raised is failure:
                raise failure
            raise raised from None
        if batch.error is not None:
            err = batch.error  # one exception object per caller (tracebacks are per raise)
            raise TaskError(err.code, err.message, retry_after=err.retry_after)

    # -- the pieces -------------------------------------------------------------------------
    def _begin(self) -> tuple[apsw.Connection, _Batch]:
        conn = self._conn
        if conn is None:
            conn = self._db.open_connection()
            conn.set_busy_handler(_BusyWait(self._db.busy_timeout_ms))
            # The commit writes the WAL; the flush to disk follows once the lock is free
            # (_finish_turn, _WalFlush): an acknowledged call is as durable as at FULL.
            conn.execute("PRAGMA synchronous=NORMAL")
            self._conn = conn
        batch = self._batch
        if batch is None:
            if not conn.get_autocommit():  # never expected: a transaction left open
                self._db.rollback(conn)
            try:
                conn.execute("BEGIN IMMEDIATE")
            except apsw.Error as exc:
                self._db.rollback(conn)
                raise self._typed(conn, exc, "cannot start a transaction") from None
            batch = self._batch = _Batch()
        return conn, batch

    @staticmethod
    def _end_call(conn: apsw.Connection, ok: bool) -> bool:
        """Release or roll back the call's savepoint; return whether the batch still lives."""
        if conn.get_autocommit():
            return False  # SQLite rolled the whole transaction back (full disk, I/O error)
        try:
            if not ok:
                conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
            conn.execute(f"RELEASE {_SAVEPOINT}")
        except apsw.Error:
            return False
        return not conn.get_autocommit()

    def _finish_turn(self, conn: apsw.Connection, batch: _Batch, *, wait: bool) -> None:
        """Hand the connection to a waiting call, or commit the batch; wait when asked."""
        with self._cond:
            if (
                batch.error is None
                and self._queue
                and not conn.get_autocommit()
                and batch.calls < self._max_batch
                and self._batch is batch
            ):
                self._busy = False
                self._owner = None
                self._cond.notify_all()
                if wait:
                    while not batch.done:
                        self._cond.wait()
                return
            self._owner = None  # still busy: this thread commits
        error = batch.error
        committed = False
        if error is None and batch.calls:
            try:
                conn.execute("COMMIT")
                committed = True
            except apsw.Error as exc:
                error = self._typed(
                    conn,
                    exc,
                    "the transaction could not commit; nothing was written. Retry the same request",
                )
        if not conn.get_autocommit():
            self._db.rollback(conn)  # a failed batch, or one with nothing to commit
        with self._cond:
            # SQLite's lock is free: the next batch may begin while this one is flushed.
            self._batch = None
            self._busy = False
            self._cond.notify_all()
        if committed:
            try:
                self._flush()
            except OSError as exc:
                error = TaskError(
                    ErrorCode.STORAGE_UNAVAILABLE,
                    _NOT_FLUSHED.format(what=exc.strerror or type(exc).__name__),
                )
        with self._cond:
            if error is None and batch.calls:
                self._batches += 1
                self._calls += batch.calls
            batch.error = error
            batch.done = True
            self._cond.notify_all()

    def _release(self) -> None:
        with self._cond:
            self._busy = False
            self._owner = None
            self._cond.notify_all()

    def _typed(self, conn: apsw.Connection, exc: apsw.Error | None, what: str) -> TaskError:
        typed = None if exc is None else self._db.typed_error(conn, exc)
        if typed is not None:
            return typed
        shown = "" if exc is None else f" ({type(exc).__name__})"
        return TaskError(ErrorCode.STORAGE_UNAVAILABLE, f"{what}{shown}")

    def _as_raised(self, conn: apsw.Connection, failure: BaseException) -> BaseException:
        """What the caller of a failed block gets (the rules of ``SqliteDatabase.write``)."""
        if isinstance(failure, OverflowError):
            # SQLite integers are signed 64-bit; the contract's are unsigned 64-bit.
            return TaskError(
                ErrorCode.OUT_OF_BOUNDS,
                "an integer is above 2^63-1, the largest value storage can hold; send a "
                "smaller value",
            )
        if isinstance(failure, apsw.Error):
            return self._db.typed_error(conn, failure) or failure
        return failure
