"""The PostgreSQL journal: :class:`PostgresStorage`, a second implementation of ``Storage``.

Many ``agent-task serve`` replicas share one database. The guarantees are the SQLite
journal's, kept across processes and hosts:

* **One writer at a time.** SQLite's ``BEGIN IMMEDIATE`` admits one writer per file; every
  read-modify-write of the domain code (a fence taken from a task row, an idempotency row
  checked then inserted, a gate consumed, a lease renewed) was written against that. A write
  transaction here takes the transaction-scoped advisory lock :data:`WRITER_LOCK` first, in
  the same round trip as ``BEGIN`` (and as the transaction's first statement, usually the
  call's token re-check), so the same holds for every replica: two replicas racing
  a workflow claim take turns, the second sees the first's fence and takes the next one. The
  statements that are hot under contention are also safe without it: ``claimNext`` selects
  ``FOR UPDATE SKIP LOCKED``, the phase index is read under ``pg_advisory_xact_lock`` on the
  task, idempotency rows have unique constraints.
* **Row-safe operations share it.** An operation declared ``row_safe`` in the registry
  (:attr:`taskcore.registry.Operation.row_safe`: ``create``, ``claimNext``, ``checkpoint``,
  ``release``) runs in :meth:`PostgresStorage.write_shared`, which takes the *shared* form
  of :data:`WRITER_LOCK`: such transactions run concurrently with each other (on every
  replica) and rely on their row locks (``FOR UPDATE SKIP LOCKED``, the task row's version
  compare-and-set, unique keys), while every other write still waits for all of them and
  they for it. Their token check reads the token row after their shared lock is held
  (:class:`~taskcore.store.postgres.stores.PgTokenStore`), so a revocation, an exclusive
  writer, commits only after the calls in flight with that token and every later call sees it.
* **Round trips.** A shared write's ``BEGIN`` and writer lock travel with its first
  statement, the call's token re-check (on this host as one simple query; on a server across
  a network, ``pipelined``, in one pipeline, as every transaction's), so a transaction that
  runs none takes no lock; on this host other transactions send them when they open
  (:mod:`taskcore.store.postgres.connection`).
* **Durable when acknowledged.** ``COMMIT`` returns after the WAL is flushed
  (``synchronous_commit`` is left at its default, ``on``).
* **Reads see one snapshot.** ``read()`` is ``REPEATABLE READ READ ONLY``.
* **Commits wake waiters everywhere.** A write transaction's signalled topics (and the
  journal's) are sent with one ``NOTIFY`` in its ``COMMIT``'s round trip; every replica's
  listening connection hears it (:mod:`taskcore.store.postgres.listen`), and this replica
  notifies its own waiters right after the commit.
* **Nothing cached across requests.** Tokens, enrollments, revocations and queue verbs are
  read from the database by each call, so a token revoked through one replica is refused by
  every other at its next request (``docs/deploy.md``, "Caches").

Connections come from a ``psycopg_pool`` pool (``pool_size`` in the URL's query sets its
maximum, default 4; each replica's exclusive writers also queue on the service's in-process
lock, its shared writers do not).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import apsw
import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from taskcore.errors import ErrorCode, TaskError
from taskcore.store.postgres.connection import (
    InsertFacts,
    PgConnection,
    pg_error,
    pipelined_for,
)
from taskcore.store.postgres.listen import PgListen, new_origin, notify_sql
from taskcore.store.postgres.migrations import COMPONENTS, migrate, schema_versions
from taskcore.store.wakeup import JOURNAL_TOPIC, Wakeup

if TYPE_CHECKING:
    from taskcore.store.audit_api import AuditStore
    from taskcore.store.authority_api import AuthorityStore
    from taskcore.store.callrows import CallKeys
    from taskcore.store.collector_api import CollectorStore
    from taskcore.store.forge_api import ForgeStore
    from taskcore.store.journal_api import JournalStore
    from taskcore.store.oauth_api import OAuthStore
    from taskcore.store.queue_api import QueueStore
    from taskcore.store.queueflow_api import QueueFlowStore
    from taskcore.store.retention_api import RetentionStore
    from taskcore.store.tokens_api import TokenStore
    from taskcore.store.webhooks_api import WebhookStore

__all__ = ["WRITER_LOCK", "PgTransaction", "PostgresStorage", "redact", "split_url"]

WRITER_LOCK = 0x6167_746B_0000_0002
"""The transaction advisory lock every write transaction holds (one writer at a time)."""

_BEGIN_WRITE = (
    "BEGIN ISOLATION LEVEL READ COMMITTED",
    "SET LOCAL lock_timeout = {timeout}",
    f"SELECT pg_advisory_xact_lock({WRITER_LOCK})",
)
_BEGIN_SHARED = (
    "BEGIN ISOLATION LEVEL READ COMMITTED",
    "SET LOCAL lock_timeout = {timeout}",
    f"SELECT pg_advisory_xact_lock_shared({WRITER_LOCK})",
)
_BEGIN_READ = ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",)
"""The statements that open each kind of transaction: sent with its first statement, in one
round trip (:class:`~taskcore.store.postgres.connection.PgConnection`)."""
_DEFAULT_POOL = 4
_MAX_POOL = 64


def split_url(url: str) -> tuple[str, int]:
    """Return the libpq URL without our own parameters, and the pool size.

    Ours: ``pool_size`` and ``pipeline`` (``on``/``off``: send a transaction's ``BEGIN`` with
    its first statement and its audit event with its ``COMMIT``; default off, see
    :func:`~taskcore.store.postgres.connection.pipelined_for`).

    >>> split_url("postgresql://u@h/db?pool_size=8&sslmode=require&pipeline=on")
    ('postgresql://u@h/db?sslmode=require', 8)
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise TaskError(
            ErrorCode.BAD_INPUT, "a database URL starts with postgresql:// (or postgres://)"
        )
    query = parse_qsl(parts.query, keep_blank_values=True)
    size = _DEFAULT_POOL
    kept = []
    for key, value in query:
        if key == "pipeline":
            if value not in ("on", "off"):
                raise TaskError(ErrorCode.BAD_INPUT, "pipeline must be on or off")
        elif key == "pool_size":
            if not value.isdigit() or not 1 <= int(value) <= _MAX_POOL:
                raise TaskError(
                    ErrorCode.BAD_INPUT, f"pool_size must be a whole number from 1 to {_MAX_POOL}"
                )
            size = int(value)
        else:
            kept.append((key, value))
    return urlunsplit(parts._replace(query=urlencode(kept))), size


def redact(url: str) -> str:
    """The URL without its password (for logs and messages).

    >>> redact("postgresql://app:s3cret@db.internal:5432/agent_task")
    'postgresql://app:***@db.internal:5432/agent_task'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return urlunsplit(parts._replace(query=""))
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc, query=""))


class PgTransaction:
    """The PostgreSQL transaction object: domain stores bound to one connection."""

    def __init__(self, conn: PgConnection, *, writable: bool, shared: bool = False) -> None:
        self.conn = conn
        self.writable = writable
        self.shared = shared
        """Whether this write transaction holds the writer lock in its shared form."""
        self.signals: set[str] = set()
        """The topics this transaction signals when it commits."""

    def signal(self, topic: str) -> None:
        """Wake the waiters of ``topic`` (on every replica) once this transaction commits."""
        self.signals.add(topic)

    # The SQLite stores are typed against apsw.Connection; PgConnection provides the three
    # calls they make (execute, changes, last_insert_rowid), hence the casts.
    @cached_property
    def _apsw(self) -> apsw.Connection:
        return cast("apsw.Connection", self.conn)

    @cached_property
    def audit(self) -> AuditStore:
        """Audit events."""
        from taskcore.store.postgres.stores import PgAuditStore

        return PgAuditStore(self._apsw)

    @cached_property
    def tokens(self) -> TokenStore:
        """Bearer tokens (hashes only)."""
        from taskcore.store.postgres.stores import PgTokenStore

        return PgTokenStore(self._apsw)

    @cached_property
    def queue(self) -> QueueStore:
        """The agent task queue."""
        from taskcore.store.postgres.stores import PgQueueStore

        return PgQueueStore(self._apsw, self.signal)

    @cached_property
    def queueflow(self) -> QueueFlowStore:
        """Unique keys, concurrency keys and limits, dependencies of queue tasks."""
        from taskcore.store.postgres.stores import PgQueueFlowStore

        return PgQueueFlowStore(self._apsw)

    @cached_property
    def authority(self) -> AuthorityStore:
        """Repositories, profiles, requirements, Changes, subjects, enrollments."""
        from taskcore.store.postgres.stores import PgAuthorityStore

        return PgAuthorityStore(self._apsw)

    @cached_property
    def journal(self) -> JournalStore:
        """Workflow tasks, attempts, retained results, idempotency rows, transitions."""
        from taskcore.store.postgres.stores import PgJournalStore

        return PgJournalStore(self._apsw)

    @cached_property
    def collector(self) -> CollectorStore:
        """Collector profiles, retained signed transfers, receipts."""
        from taskcore.store.postgres.stores import PgCollectorStore

        return PgCollectorStore(self._apsw)

    @cached_property
    def retention(self) -> RetentionStore:
        """The retention sweep's lease and last report."""
        from taskcore.store.postgres.stores import PgRetentionStore

        return PgRetentionStore(self._apsw)

    @cached_property
    def forge(self) -> ForgeStore:
        """Forge settings and the commit-status outbox."""
        from taskcore.store.postgres.stores import PgForgeStore

        return PgForgeStore(self._apsw)

    @cached_property
    def oauth(self) -> OAuthStore:
        """OAuth clients, authorization requests, grants and tokens (hashes only)."""
        from taskcore.store.postgres.stores import PgOAuthStore

        return PgOAuthStore(self._apsw)

    @cached_property
    def webhooks(self) -> WebhookStore:
        """Webhook endpoints, their deliveries and the fan-out cursor."""
        from taskcore.store.postgres.stores import PgWebhookStore

        return PgWebhookStore(self._apsw)

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


def _unavailable(exc: BaseException) -> TaskError:
    return TaskError(
        ErrorCode.STORAGE_UNAVAILABLE,
        f"the PostgreSQL database does not answer ({type(exc).__name__}); check the server "
        "and the service log, then retry",
        retry_after=1,
    )


def _typed(exc: BaseException) -> TaskError | None:
    """The typed error for a storage failure, or ``None`` for a bug to report as is."""
    if isinstance(exc, OverflowError):
        return TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            "an integer is above 2^63-1, the largest value storage can hold; send a smaller value",
        )
    if isinstance(
        exc,
        pg_errors.SerializationFailure | pg_errors.DeadlockDetected | pg_errors.LockNotAvailable,
    ):
        return TaskError(ErrorCode.BUSY, "the journal is busy; retry the same request shortly")
    if isinstance(exc, pg_errors.DiskFull):
        return TaskError(
            ErrorCode.STORAGE_FULL,
            "the PostgreSQL server's disk is full; nothing was written. Free space and retry",
            retry_after=5,
        )
    if isinstance(exc, PoolTimeout):
        return TaskError(
            ErrorCode.BUSY, "no database connection is free; retry shortly", retry_after=1
        )
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return _unavailable(exc)
    return None


class PostgresStorage:
    """The journal in a PostgreSQL database (``postgresql://`` URL)."""

    backend = "postgresql"
    set_aside: tuple[Path, ...] = ()
    """Nothing is ever moved aside for a database (the data-dir check is SQLite's)."""

    def __init__(
        self, url: str, *, migrate_on_open: bool = True, busy_timeout_ms: int = 10_000
    ) -> None:
        conninfo, size = split_url(url)
        parts = urlsplit(url)
        given = dict(parse_qsl(parts.query)).get("pipeline")
        host = dict(parse_qsl(parts.query)).get("host") or parts.hostname
        self.pipelined = pipelined_for(host, given)
        """Whether transactions pipeline their ``BEGIN`` and audit event (see connection.py)."""
        # A writer waits for the writer lock at most this long, then gets BUSY (SQLite's
        # busy timeout); 0 would mean "forever" to PostgreSQL, so it is at least 1 ms.
        timeout = max(1, int(busy_timeout_ms))
        self._begin_write = tuple(part.format(timeout=timeout) for part in _BEGIN_WRITE)
        self._begin_shared = tuple(part.format(timeout=timeout) for part in _BEGIN_SHARED)
        self.facts = InsertFacts()
        """The schema facts the call path uses (read below, once the schema is there)."""
        self.url = redact(url)
        self._local = threading.local()
        self.applied: list[str] = []
        """The migrations this open applied (``component version``)."""
        try:
            with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
                self.applied = migrate(conn, apply=migrate_on_open)
                self.facts = InsertFacts.read(conn)
        except psycopg.OperationalError as exc:
            raise _unavailable(exc) from None
        except psycopg.Error as exc:
            raise TaskError(
                ErrorCode.STORAGE_UNAVAILABLE,
                f"the database schema could not be checked or migrated ({type(exc).__name__}: "
                f"{str(exc)[:200]}); see 'agent-task db status'",
            ) from None
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=size,
            kwargs={"autocommit": True},
            open=False,
            timeout=30.0,
            name="agent-task",
        )
        self.pool.open(wait=True, timeout=30.0)
        self.origin = new_origin()
        """Names this storage in the notifications it sends (its own are not heard twice)."""
        self.wakeup = Wakeup(PgListen(conninfo, self.origin))

    @contextmanager
    def _transaction(
        self, begin: tuple[str, ...], *, writable: bool, shared: bool = False
    ) -> Iterator[PgTransaction]:
        if getattr(self._local, "busy", False):
            raise TaskError(ErrorCode.INTERNAL, "nested transactions are not supported")
        self._local.busy = True
        topics: tuple[str, ...] = ()
        try:
            with self.pool.connection() as raw:
                # BEGIN travels with the transaction's first statement (one round trip).
                conn = PgConnection(
                    raw,
                    facts=self.facts,
                    begin=begin,
                    pipelined=self.pipelined,
                    row_locks=shared,
                )
                tx = PgTransaction(conn, writable=writable, shared=shared)
                try:
                    if not self.pipelined and not shared:
                        # BEGIN (and the writer lock) now: a write() held open holds the lock.
                        # A shared write (the row-safe queue verbs) sends them with its first
                        # statement instead, its token re-check (PgConnection._begin_with).
                        conn.start()
                    yield tx
                    if not conn.started and writable:
                        conn.start()  # nothing ran: commit an empty transaction, as before
                except BaseException as exc:
                    _rollback(raw)
                    cause = exc.__cause__ if isinstance(exc, apsw.Error | OverflowError) else exc
                    typed = _typed(exc) or (None if cause is None else _typed(cause))
                    if typed is None:
                        raise
                    raise typed from None
                failed = raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
                topics = (JOURNAL_TOPIC, *tx.signals) if writable and not failed else ()
                try:
                    if conn.started:  # else a read that read nothing: nothing was opened
                        tail = (notify_sql(raw, self.origin, topics),) if topics else ()
                        conn.commit((*tail, "COMMIT"))
                except TaskError:  # a deferred insert's refusal (PgConnection.defer_write)
                    _rollback(raw)
                    raise
                except psycopg.Error as exc:
                    _rollback(raw)
                    mapped = pg_error(exc)
                    raise (
                        _typed(mapped)
                        or _typed(exc)
                        or TaskError(
                            ErrorCode.STORAGE_UNAVAILABLE,
                            f"the transaction could not commit ({type(exc).__name__}); "
                            "nothing was written",
                        )
                    ) from None
        except PoolTimeout as exc:
            raise _typed(exc) or _unavailable(exc) from None
        finally:
            self._local.busy = False
        if topics:
            self.wakeup.notify(topics)

    @contextmanager
    def write(self) -> Iterator[PgTransaction]:
        """A write transaction under :data:`WRITER_LOCK`, durable on a clean exit."""
        with self._transaction(self._begin_write, writable=True) as tx:
            yield tx

    shares_writers = True
    """:meth:`write_shared` is offered: row-safe operations run concurrently (``Service.write``
    then adds no in-process lock for them)."""

    @contextmanager
    def write_shared(self) -> Iterator[PgTransaction]:
        """A write transaction under the *shared* :data:`WRITER_LOCK`, durable on a clean exit.

        Only for operations whose every read-modify-write is guarded by a row lock, a
        compare-and-set or a unique key (``Operation.row_safe``): others like it run at the
        same time; an exclusive :meth:`write` waits for all of them, and they for it.
        """
        with self._transaction(self._begin_shared, writable=True, shared=True) as tx:
            yield tx

    @contextmanager
    def read(self) -> Iterator[PgTransaction]:
        """A read-only transaction over one snapshot."""
        with self._transaction(_BEGIN_READ, writable=False) as tx:
            yield tx

    def ping(self) -> None:
        """Raise ``STORAGE_UNAVAILABLE`` unless the database answers."""
        try:
            with self.pool.connection(timeout=5.0) as raw:
                raw.execute("SELECT 1").fetchone()
        except (psycopg.Error, PoolTimeout):
            raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "storage does not answer") from None

    def schema(self) -> dict[str, int]:
        """The recorded schema version of each component."""
        try:
            with self.pool.connection(timeout=5.0) as raw:
                return schema_versions(raw)
        except (psycopg.Error, PoolTimeout):
            raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "storage does not answer") from None

    def close(self) -> None:
        """Stop listening and close the pool."""
        self.wakeup.close()
        self.pool.close()


def _rollback(raw: psycopg.Connection[Any]) -> None:
    """Roll back what is left open before a connection goes back to the pool.

    Best effort: the caller's error is the one to report, and a connection too broken to roll
    back is discarded by psycopg_pool when it is returned (it drops connections that come back
    in a bad state).
    """
    with contextlib.suppress(psycopg.Error):
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raw.execute("ROLLBACK")


def known_versions() -> dict[str, int]:
    """The schema version of each component this release writes."""
    return {c.name: c.latest for c in COMPONENTS}
