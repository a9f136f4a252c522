"""Wake-ups across processes sharing one SQLite journal: a cheap check, polled while waited on.

Every write transaction that signals a queue topic bumps that workspace's counter in the
``queue_signal`` table (one ``UPSERT`` in the same transaction, so the counter moves exactly
when the commit lands). :class:`SqliteWatch` runs one thread per storage, and only while
someone in this process waits: every ``poll_ms`` it reads ``PRAGMA data_version`` on a
connection of its own (a few microseconds; it changes when *another* connection committed),
and when that moved it reads the counters of the workspaces waited on and notifies those that
moved, and :data:`~taskcore.store.wakeup.JOURNAL_TOPIC`. Commits of this process are notified
in-process by the storage right after they commit, which also tells the watch the counters
they write (:meth:`SqliteWatch.expect`, :meth:`SqliteWatch.settled`), so they are not
notified twice.

A topic that starts being watched is notified once after its counter is first read: a commit
that landed between the waiter's look and that read would otherwise go unheard.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import apsw

from taskcore.store.wakeup import JOURNAL_TOPIC, Wakeup, queue_topic, workspace_of

if TYPE_CHECKING:
    from taskcore.store.sqlite import SqliteDatabase

__all__ = ["BUMP_SQL", "SqliteWatch"]

BUMP_SQL = (
    "INSERT INTO queue_signal (workspace, generation) VALUES (?, 1) "
    "ON CONFLICT (workspace) DO UPDATE SET generation = generation + 1 RETURNING generation"
)
"""Bump one workspace's counter; the statement returns the new value."""


class SqliteWatch:
    """The :class:`~taskcore.store.wakeup.WakeSource` of a SQLite journal (see the module)."""

    def __init__(self, db: SqliteDatabase, *, poll_ms: int = 5) -> None:
        self._db = db
        self._poll_s = poll_ms / 1000
        self._cond = threading.Condition()
        self._topics: frozenset[str] = frozenset()
        self._seen: dict[str, int] = {}  # workspace -> counter as last notified
        self._expected: dict[str, int] = {}  # counters of our own commits under way
        self._fresh: set[str] = set()  # workspaces watched since the last poll
        self._thread: threading.Thread | None = None
        self._wakeup: Wakeup | None = None
        self._closed = False
        self.polls = 0
        """How many checks ran (tests, benchmarks)."""

    def start(self, wakeup: Wakeup) -> bool:
        """Start the polling thread (idle until a topic is watched); ``False`` if running."""
        with self._cond:
            if self._thread is not None or self._closed:
                return False
            self._wakeup = wakeup
            self._thread = threading.Thread(
                target=self._run, name="agent-task-sqlite-watch", daemon=True
            )
            self._thread.start()
            return False  # a new topic is re-checked once anyway (see watch)

    def watch(self, topics: frozenset[str]) -> None:
        """Poll while ``topics`` is not empty; a new workspace is re-checked once."""
        with self._cond:
            for topic in topics - self._topics:
                ws = workspace_of(topic)
                if ws is not None:
                    self._fresh.add(ws)
            for topic in self._topics - topics:
                ws = workspace_of(topic)
                if ws is not None:
                    self._seen.pop(ws, None)
            self._topics = topics
            self._cond.notify_all()

    def expect(self, counters: Mapping[str, int]) -> None:
        """Counters (workspace -> value) a commit of this process is about to make.

        A poll that finds one of them takes it for our own (notified in-process), not for
        another process's; :meth:`settled` ends the expectation either way.
        """
        with self._cond:
            self._expected.update(counters)

    def settled(self, counters: Mapping[str, int], *, committed: bool) -> None:
        """The commit that made ``counters`` is over (``committed``: durable and notified)."""
        with self._cond:
            for ws, value in counters.items():
                if self._expected.get(ws) == value:
                    del self._expected[ws]
                if committed and ws in self._seen and value > self._seen[ws]:
                    self._seen[ws] = value

    def close(self) -> None:
        """Stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)

    def _run(self) -> None:
        conn: apsw.Connection | None = None
        version: int | None = None
        try:
            while True:
                with self._cond:
                    while not self._topics and not self._closed:
                        self._cond.wait()
                        version = None  # idle: start from a fresh reading next time
                    if self._closed:
                        return
                    self._cond.wait(self._poll_s)
                    if self._closed:
                        return
                    topics, fresh = self._topics, set(self._fresh)
                    self._fresh.clear()
                if not topics:
                    continue
                try:
                    if conn is None:
                        conn = self._db.open_connection()
                    row = conn.execute("PRAGMA data_version").fetchone()
                    self.polls += 1
                    current = int(row[0]) if row is not None else 0
                    if current == version and not fresh:
                        continue
                    moved = version is not None and current != version
                    version = current
                    self._check(conn, topics, fresh, moved)
                except apsw.Error:
                    conn = None  # reopened on the next poll; a missed poll only delays
                    version = None
        finally:
            if conn is not None:
                conn.close()

    def _check(
        self, conn: apsw.Connection, topics: frozenset[str], fresh: set[str], moved: bool
    ) -> None:
        wakeup = self._wakeup
        if wakeup is None:
            return
        spaces = sorted(ws for t in topics if (ws := workspace_of(t)) is not None)
        counters: dict[str, int] = {}
        if spaces:
            marks = ", ".join("?" * len(spaces))
            rows: list[Any] = conn.execute(
                f"SELECT workspace, generation FROM queue_signal WHERE workspace IN ({marks})",  # noqa: S608 - placeholders only
                spaces,
            ).fetchall()
            counters = {str(r[0]): int(r[1]) for r in rows}
        notify: list[str] = []
        with self._cond:
            for ws in spaces:
                value = counters.get(ws, 0)
                seen = self._seen.get(ws)
                if ws in fresh or seen is None:
                    self._seen[ws] = value
                    if ws in fresh:
                        notify.append(queue_topic(ws))
                elif value > seen:
                    self._seen[ws] = value
                    if self._expected.get(ws) != value:  # not just our own commit
                        notify.append(queue_topic(ws))
        if moved and JOURNAL_TOPIC in topics:
            notify.append(JOURNAL_TOPIC)
        if notify:
            wakeup.notify(notify)
