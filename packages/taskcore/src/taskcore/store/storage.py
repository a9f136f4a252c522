"""The journal storage: one interface, one SQLite implementation today.

Domain code (the queue, the workflow journal, the authority, the front door) never sees SQL
or a connection. It asks a :class:`Storage` for a transaction and talks to the domain stores
the transaction exposes (``tx.audit``, ``tx.tokens``, ``tx.queue``, ...). A PostgreSQL backend
is a second implementation of :class:`Storage` and of each ``*_api`` protocol.

The journal lives at ``DATA_DIR/journal.sqlite``.

>>> import tempfile, pathlib
>>> storage = open_storage(pathlib.Path(tempfile.mkdtemp()) / "data", create=True)
>>> with storage.write() as tx:
...     tx.audit.count()
0
>>> storage.close()
"""

from __future__ import annotations

import fcntl
import importlib
import os
import re
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import apsw

from taskcore.errors import ErrorCode, TaskError
from taskcore.paths import default_data_dir
from taskcore.store.datadir import JOURNAL_NAME, check_new_journal
from taskcore.store.groupcommit import GroupCommit
from taskcore.store.journal_file import hold_shared, release
from taskcore.store.rowcache import CommittedRows
from taskcore.store.sqlite import Component, SqliteDatabase
from taskcore.store.sqlite_wakeup import BUMP_SQL, SqliteWatch
from taskcore.store.wakeup import JOURNAL_TOPIC, Wakeup, workspace_of

if TYPE_CHECKING:
    from taskcore.store.audit_api import AuditStore
    from taskcore.store.authority_api import AuthorityStore
    from taskcore.store.callrows import CallKeys
    from taskcore.store.collector_api import CollectorStore
    from taskcore.store.forge_api import ForgeStore
    from taskcore.store.journal_api import JournalStore
    from taskcore.store.oauth_api import OAuthStore
    from taskcore.store.postgres.storage import PostgresStorage
    from taskcore.store.queue_api import QueueStore
    from taskcore.store.queueflow_api import QueueFlowStore
    from taskcore.store.retention_api import RetentionStore
    from taskcore.store.tokens_api import TokenStore
    from taskcore.store.webhooks_api import WebhookStore

__all__ = [
    "DATABASE_ENV",
    "JOURNAL_FILENAME",
    "JoinedStorage",
    "SharedWriteStorage",
    "SqliteStorage",
    "SqliteTransaction",
    "Storage",
    "Transaction",
    "database_url",
    "journal_components",
    "open_storage",
    "postgres_storage",
]

JOURNAL_FILENAME = JOURNAL_NAME

DATABASE_ENV = "AGENT_TASK_DATABASE"
"""The environment variable naming a PostgreSQL database (what ``--database`` sets)."""


# Each name is a module ``taskcore.store.sqlite_<name>`` exporting ``COMPONENT``.
_COMPONENT_MODULES: tuple[str, ...] = (
    "audit",
    "tokens",
    "queue",
    "authority",
    "journal",
    "collector",
    "retention",
    "forge",
    "oauth",
    "webhooks",
    "queueflow",
)


def journal_components() -> tuple[Component, ...]:
    """Return every component of the journal database, in migration order."""
    out = []
    for name in _COMPONENT_MODULES:
        module = importlib.import_module(f"taskcore.store.sqlite_{name}")
        out.append(module.COMPONENT)
    return tuple(out)


class Transaction(Protocol):
    """One open transaction; each property is a domain store bound to it."""

    @property
    def audit(self) -> AuditStore:
        """Audit events."""
        ...

    @property
    def tokens(self) -> TokenStore:
        """Bearer tokens (hashes only)."""
        ...

    @property
    def queue(self) -> QueueStore:
        """The agent task queue (tasks, verbs, matters, approval gates, checkpoints, ext)."""
        ...

    @property
    def queueflow(self) -> QueueFlowStore:
        """Unique keys, concurrency keys and limits, dependencies of queue tasks."""
        ...

    @property
    def authority(self) -> AuthorityStore:
        """Repositories, profiles, requirements, Changes, subjects, enrollments."""
        ...

    @property
    def journal(self) -> JournalStore:
        """Workflow tasks, attempts, retained results, idempotency rows, transitions."""
        ...

    @property
    def collector(self) -> CollectorStore:
        """Collector profiles, retained signed transfers, receipts."""
        ...

    @property
    def retention(self) -> RetentionStore:
        """The retention sweep's lease and last report."""
        ...

    @property
    def forge(self) -> ForgeStore:
        """Forge settings and the commit-status outbox."""
        ...

    @property
    def oauth(self) -> OAuthStore:
        """OAuth clients, authorization requests, grants and tokens (hashes only)."""
        ...

    @property
    def webhooks(self) -> WebhookStore:
        """Webhook endpoints, their deliveries (the outbox) and the fan-out cursor."""
        ...

    def prefetch(self, keys: CallKeys) -> None:
        """Read the rows one workflow call looks up in one go (:mod:`taskcore.store.callrows`).

        Nothing changes for the caller but the number of statements: the stores answer their
        usual lookups from what was read, for the rest of the transaction.
        """
        ...

    def signal(self, topic: str) -> None:
        """Wake the waiters of ``topic`` once this transaction commits (:mod:`.wakeup`).

        Nothing is signalled if it rolls back. Every write transaction signals
        :data:`~taskcore.store.wakeup.JOURNAL_TOPIC` without asking.
        """
        ...


class Storage(Protocol):
    """A journal: transactions, a health ping, its schema, close."""

    backend: str
    """``"sqlite"`` or ``"postgresql"``."""

    wakeup: Wakeup
    """Where commits are announced to waiters, in this process and others (:mod:`.wakeup`)."""

    def write(self) -> AbstractContextManager[Transaction]:
        """A serialized write transaction, durable when the block exits cleanly."""
        ...

    def read(self) -> AbstractContextManager[Transaction]:
        """A read transaction over one consistent snapshot."""
        ...

    def ping(self) -> None:
        """Raise ``STORAGE_UNAVAILABLE`` unless storage answers."""
        ...

    def schema(self) -> dict[str, int]:
        """The recorded schema version of each component."""
        ...

    def close(self) -> None:
        """Release every connection."""
        ...


class SharedWriteStorage(Storage, Protocol):
    """A :class:`Storage` that can also run row-safe writers concurrently (``shares_writers``).

    ``write_shared()`` is a write transaction that runs beside other shared ones and excludes
    every ``write()`` (PostgreSQL: the shared form of the writer advisory lock). Only for an
    operation declared ``row_safe``, whose every read-modify-write is guarded by its own
    row locks, compare-and-sets or unique keys.
    """

    shares_writers: bool

    def write_shared(self) -> AbstractContextManager[Transaction]:
        """A write transaction under the shared writer lock, durable when the block exits."""
        ...


class JoinedStorage:
    """A :class:`Storage` whose ``write()`` and ``read()`` are one already open transaction.

    How a front-door handler runs code written against :class:`Storage` (the workflow
    journal, the collector, the operator's acts) inside the transaction the service opened
    for the call: entering either block neither begins nor commits, so the handler's rows,
    the rows of everything it calls and the call's audit event commit together, or roll back
    together when anything raises. Backend-neutral: it only hands the transaction on.

    ``write()`` on a read-only transaction is a programming error (``INTERNAL``).
    """

    def __init__(
        self, tx: Transaction, *, writable: bool = True, wakeup: Wakeup | None = None
    ) -> None:
        self.tx = tx
        self.writable = writable
        self.wakeup = wakeup if wakeup is not None else Wakeup()
        """The opener's wake-ups, if given (signals go through the joined transaction)."""

    @contextmanager
    def write(self) -> Iterator[Transaction]:
        """The joined transaction (must be a write transaction)."""
        if not self.writable:
            raise TaskError(ErrorCode.INTERNAL, "a write inside a read-only call")
        yield self.tx

    @contextmanager
    def read(self) -> Iterator[Transaction]:
        """The joined transaction (reads see its own uncommitted rows)."""
        yield self.tx

    backend = "joined"
    """Not a backend: the opener's storage knows which one it is."""

    def ping(self) -> None:
        """Nothing to check: the transaction is open."""

    def schema(self) -> dict[str, int]:
        """Nothing to report: ask the opener's storage."""
        return {}

    def close(self) -> None:
        """Nothing to release: the transaction belongs to its opener."""


_MEMOISING = ("authority", "tokens", "journal")
"""The stores that memoise rows for the rest of a transaction (``reset`` at each begin)."""


class SqliteTransaction:
    """The SQLite transaction object: domain stores bound to one apsw connection.

    A storage keeps one per connection and reuses it (and the store objects it made) for
    every transaction on that connection; :meth:`begin` starts each one.
    """

    def __init__(
        self,
        conn: apsw.Connection,
        *,
        writable: bool,
        committed: CommittedRows | None = None,
    ) -> None:
        self.conn = conn
        self.writable = writable
        self._committed = committed
        self.signals: set[str] = set()
        """The topics this transaction signals when it commits (reset by :meth:`begin`)."""

    def begin(self) -> None:
        """Start a new transaction: forget what the last one memoised and signalled."""
        for name in _MEMOISING:
            if name in self.__dict__:
                self.__dict__[name].reset()
        self.signals = set()

    def signal(self, topic: str) -> None:
        """Wake the waiters of ``topic`` once this transaction commits."""
        self.signals.add(topic)

    def flush_signals(self) -> dict[str, int]:
        """Bump the change counter of every workspace signalled (inside the transaction).

        Other processes notice a moved counter (:mod:`taskcore.store.sqlite_wakeup`); returns
        the new counter per workspace.
        """
        counters: dict[str, int] = {}
        for topic in sorted(self.signals):
            ws = workspace_of(topic)
            if ws is not None:
                row: Any = self.conn.execute(BUMP_SQL, (ws,)).fetchone()
                counters[ws] = int(row[0])
        return counters

    def prefetch(self, keys: CallKeys) -> None:
        """Read the rows of one workflow call at once (:mod:`taskcore.store.callrows`)."""
        from taskcore.store.callrows import Seeded, prefetch_call

        prefetch_call(
            self.conn,
            authority=cast("Seeded", self.authority),
            tokens=cast("Seeded", self.tokens),
            journal=cast("Seeded", self.journal),
            keys=keys,
        )

    def learned(self) -> dict[tuple[Any, ...], Any]:
        """Immutable authority rows this transaction read (see ``CommittedRows``)."""
        if "authority" in self.__dict__:
            learned: dict[tuple[Any, ...], Any] = self.__dict__["authority"].learned()
            return learned
        return {}

    @cached_property
    def audit(self) -> AuditStore:
        """Audit events."""
        from taskcore.store.sqlite_audit import SqliteAuditStore

        return SqliteAuditStore(self.conn)

    @cached_property
    def tokens(self) -> TokenStore:
        """Bearer tokens (hashes only)."""
        from taskcore.store.sqlite_tokens import SqliteTokenStore

        return SqliteTokenStore(self.conn)

    @cached_property
    def queue(self) -> QueueStore:
        """The agent task queue (tasks, verbs, matters, approval gates, checkpoints, ext)."""
        from taskcore.store.sqlite_queue import SqliteQueueStore

        return SqliteQueueStore(self.conn, self.signal)

    @cached_property
    def queueflow(self) -> QueueFlowStore:
        """Unique keys, concurrency keys and limits, dependencies of queue tasks."""
        from taskcore.store.sqlite_queueflow import SqliteQueueFlowStore

        return SqliteQueueFlowStore(self.conn)

    @cached_property
    def authority(self) -> AuthorityStore:
        """Repositories, profiles, requirements, Changes, subjects, enrollments."""
        from taskcore.store.sqlite_authority import SqliteAuthorityStore

        return SqliteAuthorityStore(self.conn, self._committed)

    @cached_property
    def journal(self) -> JournalStore:
        """Workflow tasks, attempts, retained results, idempotency rows, transitions."""
        from taskcore.store.sqlite_journal import SqliteJournalStore

        return SqliteJournalStore(self.conn)

    @cached_property
    def collector(self) -> CollectorStore:
        """Collector profiles, retained signed transfers, receipts."""
        from taskcore.store.sqlite_collector import SqliteCollectorStore

        return SqliteCollectorStore(self.conn)

    @cached_property
    def retention(self) -> RetentionStore:
        """The retention sweep's lease and last report."""
        from taskcore.store.sqlite_retention import SqliteRetentionStore

        return SqliteRetentionStore(self.conn)

    @cached_property
    def forge(self) -> ForgeStore:
        """Forge settings and the commit-status outbox."""
        from taskcore.store.sqlite_forge import SqliteForgeStore

        return SqliteForgeStore(self.conn)

    @cached_property
    def oauth(self) -> OAuthStore:
        """OAuth clients, authorization requests, grants and tokens (hashes only)."""
        from taskcore.store.sqlite_oauth import SqliteOAuthStore

        return SqliteOAuthStore(self.conn)

    @cached_property
    def webhooks(self) -> WebhookStore:
        """Webhook endpoints, their deliveries and the fan-out cursor."""
        from taskcore.store.sqlite_webhooks import SqliteWebhookStore

        return SqliteWebhookStore(self.conn)


class SqliteStorage:
    """The embedded default: ``DATA_DIR/journal.sqlite``.

    Write transactions go through one :class:`~taskcore.store.groupcommit.GroupCommit` per
    storage: concurrent writers of this process each run in their own savepoint of a shared
    transaction and share its fsync; each returns once the commit covering it is durable.
    """

    groups_writers = True
    """Concurrent :meth:`write` calls are queued and grouped here (``Service.write`` adds no
    lock of its own)."""

    backend = "sqlite"

    def __init__(
        self, db: SqliteDatabase, *, set_aside: tuple[Path, ...] = (), hold: int | None = None
    ) -> None:
        self.db = db
        self.hold = hold
        """The shared hold on the data directory's journal (:mod:`taskcore.store.journal_file`)."""
        self.writer = GroupCommit(db)
        """The group-commit writer every :meth:`write` goes through."""
        self.committed = CommittedRows()
        """Immutable authority rows known committed, shared by every transaction."""
        self._transactions: dict[apsw.Connection, SqliteTransaction] = {}
        self._transactions_lock = threading.Lock()
        self.watch = SqliteWatch(db)
        """The cheap check that hears other processes' commits while someone waits."""
        self.wakeup = Wakeup(self.watch)
        self.set_aside = set_aside
        """Files of an earlier journal moved aside when this one was initialised."""

    def _transaction(self, conn: apsw.Connection, *, writable: bool) -> SqliteTransaction:
        """The connection's transaction object (one per connection, reused), begun."""
        tx = self._transactions.get(conn)
        if tx is None:
            tx = SqliteTransaction(conn, writable=writable, committed=self.committed)
            with self._transactions_lock:
                self._transactions[conn] = tx
        tx.begin()
        return tx

    @property
    def path(self) -> Path:
        """The journal file."""
        return self.db.path

    @contextmanager
    def write(self) -> Iterator[SqliteTransaction]:
        """A serialized write transaction, durable (fsynced) when the block exits cleanly.

        The block runs in its own savepoint of a ``BEGIN IMMEDIATE`` transaction that other
        threads' blocks may share (group commit); an exception rolls back this block only.
        Once durable, the topics it signalled (and the journal's) are notified.
        """
        counters: dict[str, int] = {}
        try:
            with self.writer.write() as conn:
                tx = self._transaction(conn, writable=True)
                yield tx
                learned = tx.learned()  # taken while this call still holds the connection
                if tx.signals:
                    counters = tx.flush_signals()
                    self.watch.expect(counters)
                topics = (JOURNAL_TOPIC, *tx.signals)
        except BaseException:
            if counters:
                self.watch.settled(counters, committed=False)
            raise
        self.committed.learn(learned)  # durable now
        if counters:
            self.watch.settled(counters, committed=True)
        self.wakeup.notify(topics)

    @contextmanager
    def read(self) -> Iterator[SqliteTransaction]:
        """A read transaction over one consistent snapshot."""
        with self.db.read() as conn:
            tx = self._transaction(conn, writable=False)
            yield tx
            self.committed.learn(tx.learned())

    def ping(self) -> None:
        """Raise ``STORAGE_UNAVAILABLE`` unless storage answers."""
        self.db.ping()

    def schema(self) -> dict[str, int]:
        """The recorded schema version of each component."""
        with self.db.read() as conn:
            return {str(n): int(v) for n, v in conn.execute("SELECT * FROM schema_versions")}

    def close(self) -> None:
        """Release every connection."""
        self.wakeup.close()
        self.writer.close()
        with self._transactions_lock:
            self._transactions.clear()
        self.db.close()
        release(self.hold)
        self.hold = None


def database_url(database: str | None = None) -> str | None:
    """The PostgreSQL database to use: ``database``, else ``$AGENT_TASK_DATABASE``, else none.

    An empty value means none (the embedded SQLite journal in the data dir).
    """
    chosen = database if database is not None else os.environ.get(DATABASE_ENV, "")
    return chosen.strip() or None


_URL_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:/")


def journal_data_dir(data_dir: Path | str | None) -> Path:
    """The data directory a library caller names (default: ``default_data_dir()``).

    A value that looks like a URL (``postgresql://...``, or any ``scheme:/`` that a
    :class:`~pathlib.Path` made of one) is refused, typed, instead of becoming a directory
    named after its scheme: a database is named by ``database=``. The message never repeats
    the value (a URL may hold a password).

    >>> journal_data_dir("postgresql://app@db.internal/tasks")
    Traceback (most recent call last):
    taskcore.errors.TaskError: the data directory looks like a URL (postgresql://...); a PostgreSQL journal is opened with database='postgresql://...' (agent-task: --database), and data_dir names a local directory
    """
    if data_dir is None:
        return default_data_dir()
    text = str(data_dir)
    if "://" in text or _URL_LIKE.match(text):
        scheme = text.split(":", 1)[0]
        raise TaskError(
            ErrorCode.INVALID_PATH,
            f"the data directory looks like a URL ({scheme}://...); a PostgreSQL journal is "
            "opened with database='postgresql://...' (agent-task: --database), and data_dir "
            "names a local directory",
        )
    return Path(data_dir)


def check_database_url(database: str) -> None:
    """Refuse a ``database`` that is not a ``postgresql://`` (or ``postgres://``) URL."""
    if not database.strip().startswith(("postgresql://", "postgres://")):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "database must be a PostgreSQL URL, postgresql://USER@HOST/DB (or empty for the "
            "SQLite journal in the data dir)",
        )


def open_storage(
    data_dir: Path | str,
    *,
    create: bool = False,
    readonly: bool = False,
    busy_timeout_ms: int = 10_000,
    init: bool = False,
    database: str | None = None,
) -> SqliteStorage | PostgresStorage:
    """Open the journal: the PostgreSQL ``database`` if one is named, else the one in ``data_dir``.

    This is the one place storage is opened. A ``data_dir`` that looks like a URL is refused
    (:func:`journal_data_dir`), and so is a ``database`` that is not a PostgreSQL URL.
    ``database`` (default ``$AGENT_TASK_DATABASE``,
    what every command's ``--database`` sets) is a ``postgresql://`` URL: that database is
    the journal, migrated on open under an advisory lock unless ``readonly`` (which refuses a
    schema that is behind instead), and ``data_dir`` keeps only the files a replica keeps
    (the authority key). Otherwise the journal is ``DATA_DIR/journal.sqlite``:

    With ``create=False`` a missing journal is a ``NOT_FOUND`` error and nothing is created;
    this is what side-effect-free reads use (``JOURNAL_MISSING`` instead when the directory
    holds state of an earlier service, so the answer says how to restore it). ``readonly=True`` opens without migrating. With
    ``create=True`` a journal is created only in a directory that holds no state of an
    earlier one (:func:`taskcore.store.datadir.check_new_journal`: ``JOURNAL_MISSING``
    otherwise); ``init=True`` moves such state aside first (``agent-task serve --init``).
    """
    data_dir = journal_data_dir(data_dir)
    if database and database.strip():
        check_database_url(database)
    url = database_url(database)
    if url is not None:
        backend = postgres_storage()
        if create and not readonly:
            # The replica's own files (the authority key, the first admin token) live here.
            _make_data_dir(Path(data_dir))
        return backend(url, migrate_on_open=not readonly, busy_timeout_ms=busy_timeout_ms)
    if create and not readonly:
        _make_data_dir(data_dir)
        if _fresh(data_dir / JOURNAL_FILENAME):
            # Concurrent first starts: one creates the journal while the others wait here,
            # then find it non-empty instead of mistaking its first moments for a loss.
            with _directory_lock(data_dir):
                moved: tuple[Path, ...] = ()
                if _fresh(data_dir / JOURNAL_FILENAME):
                    moved = check_new_journal(data_dir, init=init)
                storage = _open_sqlite(data_dir, True, False, busy_timeout_ms)
                storage.set_aside = moved
                return storage
    elif _fresh(data_dir / JOURNAL_FILENAME):
        # Nothing will be created; if an earlier service's state is here, say the journal was
        # lost (JOURNAL_MISSING, how to restore) rather than "there is no journal".
        check_new_journal(data_dir)
    return _open_sqlite(data_dir, create, readonly, busy_timeout_ms)


POSTGRES_EXTRA = "agenttask-core[postgres]"
"""The extra that installs the PostgreSQL driver (psycopg and its pool)."""


def postgres_storage() -> type[PostgresStorage]:
    """The PostgreSQL backend's class, importing psycopg.

    psycopg is an optional dependency (the ``postgres`` extra): without it, a
    ``postgresql://`` database is ``STORAGE_UNAVAILABLE`` naming the extra to install,
    never an import traceback.
    """
    try:
        from taskcore.store.postgres.storage import PostgresStorage
    except ImportError as exc:
        missing = exc.name or ""
        if not missing.startswith("psycopg") and "psycopg" not in str(exc):
            raise
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"a postgresql:// database needs the PostgreSQL driver ({missing or 'psycopg'} "
            f"cannot be imported): pip install '{POSTGRES_EXTRA}'",
            details={"extra": POSTGRES_EXTRA},
        ) from None
    return PostgresStorage


def _make_data_dir(data_dir: Path) -> None:
    if data_dir.is_symlink():
        raise TaskError(ErrorCode.INVALID_PATH, "the data directory must not be a symlink")
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)


def _fresh(journal: Path) -> bool:
    try:
        return not journal.exists() or journal.stat().st_size == 0
    except OSError:
        return False  # unreadable: the open reports it


@contextmanager
def _directory_lock(data_dir: Path) -> Iterator[None]:
    fd = os.open(data_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _open_sqlite(
    data_dir: Path, create: bool, readonly: bool, busy_timeout_ms: int
) -> SqliteStorage:
    # The hold comes first (a restore in progress is refused before the file is read) and
    # only where a journal is or will be: a read-only open of nothing creates no lock file.
    exists = create or (data_dir / JOURNAL_FILENAME).exists()
    hold = hold_shared(data_dir, create=not readonly and exists)
    try:
        db = SqliteDatabase(
            data_dir / JOURNAL_FILENAME,
            journal_components(),
            create=create,
            readonly=readonly,
            busy_timeout_ms=busy_timeout_ms,
        )
    except BaseException:
        release(hold)
        raise
    return SqliteStorage(db, hold=hold)
