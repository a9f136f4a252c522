"""Wake-ups across replicas of a PostgreSQL journal: ``LISTEN``/``NOTIFY``.

A write transaction that signalled topics sends one ``NOTIFY`` on :data:`CHANNEL` inside the
transaction, in the same round trip as its ``COMMIT`` (:func:`notify_sql`); PostgreSQL
delivers it only if and when the transaction commits. The payload names the sending storage
(``o``, a random id per process and storage) and the topics (``t``), so a replica ignores
its own notifications: those were notified in-process already, right after the commit.

:class:`PgListen` is the one listening connection of a process's storage: a daemon thread
started by the first waiter, reading notifications and calling
:meth:`~taskcore.store.wakeup.Wakeup.notify` for the topics it names (also those nobody here waits
on yet: a waiter registering just after must find their generation moved). A dropped
connection is reopened (after a short pause). The first waiter of the process looks once more
once ``LISTEN`` runs, and after a reconnection every topic is notified once
(:meth:`~taskcore.store.wakeup.Wakeup.notify_all`, also those nobody waits on yet): a commit
may have gone unheard meanwhile.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg import sql

from taskcore.store.postgres.literals import literal
from taskcore.store.wakeup import Wakeup

__all__ = ["CHANNEL", "PAYLOAD_MAX_BYTES", "PgListen", "new_origin", "notify_sql", "parse"]

CHANNEL = "agent_task_wakeup"
PAYLOAD_MAX_BYTES = 7000
"""PostgreSQL refuses payloads of 8000 bytes and more; past this one the topics are dropped
and ``"all": true`` sent instead (every topic of the receiving replica is notified once)."""


def new_origin() -> str:
    """A random id naming one storage of one process in the payloads it sends."""
    return secrets.token_hex(8)


def payload(origin: str, topics: Iterable[str]) -> str:
    """The notification payload: who sent it and which topics.

    >>> payload("abc", ["queue/w1", "journal"])
    '{"o":"abc","t":["journal","queue/w1"]}'
    """
    text = json.dumps({"o": origin, "t": sorted(set(topics))}, separators=(",", ":"))
    if len(text.encode("utf-8")) > PAYLOAD_MAX_BYTES:
        text = json.dumps({"o": origin, "all": True}, separators=(",", ":"))
    return text


def parse(text: str) -> tuple[str, tuple[str, ...] | None]:
    """``(origin, topics)`` of a payload; ``None`` topics means "every topic".

    >>> parse('{"o":"abc","t":["queue/w1"]}')
    ('abc', ('queue/w1',))
    >>> parse("not json")
    ('', ())
    """
    try:
        doc = json.loads(text)
    except ValueError:
        return "", ()
    if not isinstance(doc, dict):
        return "", ()
    origin = doc.get("o")
    origin = origin if isinstance(origin, str) else ""
    if doc.get("all") is True:
        return origin, None
    topics = doc.get("t")
    if not isinstance(topics, list):
        return origin, ()
    return origin, tuple(t for t in topics if isinstance(t, str))


def notify_sql(conn: psycopg.Connection[Any], origin: str, topics: Iterable[str]) -> str:
    """``SELECT pg_notify(...)`` with the payload as a literal (sent with ``COMMIT``)."""
    text = payload(origin, topics)
    bound = literal(text) if "\x00" not in text else None
    if bound is None:
        bound = sql.Literal(text).as_string(conn)
    return f"SELECT pg_notify('{CHANNEL}', {bound})"


class PgListen:
    """The :class:`~taskcore.store.wakeup.WakeSource` of a PostgreSQL journal."""

    def __init__(self, conninfo: str, origin: str) -> None:
        self._conninfo = conninfo
        self.origin = origin
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self._thread: threading.Thread | None = None
        self._wakeup: Wakeup | None = None
        self._topics: frozenset[str] = frozenset()
        self._closed = False
        self.received = 0
        """Notifications received from other storages (tests)."""

    def start(self, wakeup: Wakeup) -> bool:
        """Start listening (once); wait until ``LISTEN`` ran. ``True`` if (re)started now."""
        with self._lock:
            if self._closed:
                return False
            if self._thread is None:
                self._wakeup = wakeup
                self._thread = threading.Thread(
                    target=self._run, name="agent-task-pg-listen", daemon=True
                )
                self._thread.start()
                started = True
            else:
                started = False
        self._listening.wait(10.0)
        return started

    def watch(self, topics: frozenset[str]) -> None:
        """The topics waited on here: kept for inspection only, never a filter.

        Every notification is delivered, its topics waited on or not: a claimer that looked
        before the commit and registers after must find the topic's generation moved.
        """
        with self._lock:
            self._topics = topics

    def close(self) -> None:
        """Stop listening (the thread notices within a second)."""
        with self._lock:
            self._closed = True
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=3)

    def _run(self) -> None:
        pause = 0.05
        lost = False
        while True:
            with self._lock:
                if self._closed:
                    return
            try:
                with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    pause = 0.05
                    if lost:  # commits while we were away went unheard: everyone looks again
                        lost = False
                        self._deliver_all()
                    while True:
                        with self._lock:
                            if self._closed:
                                return
                        for note in conn.notifies(timeout=1.0):
                            self._deliver(note.payload)
            except psycopg.Error:
                lost = True
                self._listening.set()  # do not hold up waiters while the database is away
                time.sleep(pause)
                pause = min(pause * 2, 2.0)

    def _deliver_all(self) -> None:
        with self._lock:
            wakeup = self._wakeup
        if wakeup is not None:
            wakeup.notify_all()  # what was missed is unknown: every topic, waited on or not

    def _deliver(self, text: str) -> None:
        origin, topics = parse(text)
        if origin == self.origin:
            return
        with self._lock:
            wakeup = self._wakeup
        self.received += 1
        if wakeup is None:
            return
        # Every topic, not only those waited on now: the notify bumps each topic's generation,
        # so a claimer that looked before this commit and registers its waiter only after
        # (``since=`` the generation it read) starts out woken instead of missing it.
        if topics is None:
            wakeup.notify_all()
        elif topics:
            wakeup.notify(topics)
