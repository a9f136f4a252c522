"""Wake-ups: a commit tells whoever waits for it, in this process and in the others.

The journal signals; waiters await. A write transaction names the *topics* its commit may
interest someone in (:meth:`Transaction.signal`, normally called by a domain store: the queue
store signals :func:`queue_topic` of a workspace when a task may have become claimable), and
every write transaction signals :data:`JOURNAL_TOPIC` ("the journal committed"). Once the
commit is durable the storage calls :meth:`Wakeup.notify` with them, so a waiter in this
process wakes at once. Other processes learn of it through the storage's
:class:`WakeSource`: on SQLite a cheap check polled only while someone waits
(``PRAGMA data_version`` and a per-workspace change counter,
:mod:`taskcore.store.sqlite_wakeup`); on PostgreSQL ``LISTEN``/``NOTIFY``, the notification
sent inside the committing transaction, one listening connection per process
(:mod:`taskcore.store.postgres.listen`).

Nothing here holds a transaction, a lock of the journal or a thread per waiter: a waiter is a
small object with a flag, woken through ``loop.call_soon_threadsafe`` (an asyncio waiter) or a
:class:`threading.Event` (a blocking one). One timer thread serves every :meth:`Wakeup.notify_at`
(things that become due by time alone: a lease that expires, a task whose ``runAt`` arrives).

**Groups.** Waiters of a topic that would all find the same thing when woken (the queue's
``claimNext`` callers of one carrier verb and autonomy) share a *group*. A notification wakes
one waiter per group, the one waiting longest; a waiter that then found something calls
:meth:`Waiter.pass_on` (there may be more), one that found nothing does not (nor would the
others of its group), and a waiter that leaves with a wake-up it never used passes it on. So a
create wakes one claimer, not all of them. Waiters without a group (``group=None``) are woken
by every notification of their topic (an event stream).

**No lost wake-ups.** Read :meth:`Wakeup.generation` *before* looking (before the snapshot
your check reads), and register with ``since=`` that number: a commit that your look did not
see notifies after it committed, so after your read, and the waiter starts out woken.

>>> import asyncio
>>> wakeup = Wakeup()
>>> topic = queue_topic("w1")
>>> since = wakeup.generation(topic)
>>> waiter = wakeup.waiter(topic, group=("agent.run", 1), since=since)
>>> async def main() -> bool:
...     asyncio.get_running_loop().call_later(0.01, wakeup.notify, [topic])
...     return await waiter.wait(5.0)
>>> asyncio.run(main())
True
>>> waiter.close()
>>> wakeup.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import threading
import time
from collections.abc import Hashable, Iterable, Mapping
from typing import Protocol

__all__ = [
    "JOURNAL_TOPIC",
    "QUEUE_TOPIC_PREFIX",
    "Waiter",
    "WakeSource",
    "Wakeup",
    "queue_topic",
    "workspace_of",
]

JOURNAL_TOPIC = "journal"
"""Signalled by every committed write transaction (the audit row of every call is one)."""

QUEUE_TOPIC_PREFIX = "queue/"


def queue_topic(workspace: str) -> str:
    """The topic a workspace's queue signals when a task may have become claimable.

    >>> queue_topic("w1")
    'queue/w1'
    """
    return QUEUE_TOPIC_PREFIX + workspace


def workspace_of(topic: str) -> str | None:
    """The workspace of a queue topic, or ``None`` for another topic.

    >>> workspace_of("queue/w1"), workspace_of(JOURNAL_TOPIC)
    ('w1', None)
    """
    return topic[len(QUEUE_TOPIC_PREFIX) :] if topic.startswith(QUEUE_TOPIC_PREFIX) else None


class WakeSource(Protocol):
    """How a storage hears of commits made by other processes.

    :meth:`watch` is called with the set of topics someone in this process waits on whenever
    it changes (empty: nobody waits; a source may then stop looking). The source calls
    :meth:`Wakeup.notify` for what another process committed. :meth:`start` returns whether
    it began listening only now (the caller then re-checks once: a commit between its look
    and the start may not have been heard).
    """

    def start(self, wakeup: Wakeup) -> bool:
        """Begin listening (idempotent); return whether this call started it."""
        ...

    def watch(self, topics: frozenset[str]) -> None:
        """The topics waited on in this process now."""
        ...

    def close(self) -> None:
        """Stop listening and release what the source holds."""
        ...


class Waiter:
    """One registered waiter of one topic (see :meth:`Wakeup.waiter`).

    Use it from one coroutine or one thread at a time: :meth:`wait` (asyncio) or
    :meth:`wait_blocking` (a thread) until woken, then look again; :meth:`close` when done.
    """

    __slots__ = ("_event", "_future", "_loop", "_owner", "closed", "group", "signalled", "topic")

    def __init__(self, owner: Wakeup, topic: str, group: Hashable | None) -> None:
        self._owner = owner
        self.topic = topic
        self.group = group
        self.signalled = False
        """Woken and not yet consumed by a :meth:`wait` (guarded by the owner's lock)."""
        self.closed = False
        self._future: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: threading.Event | None = None

    async def wait(self, timeout: float) -> bool:
        """Wait until woken (``True``) or ``timeout`` seconds pass (``False``).

        Returns at once if a wake-up arrived since the last wait (or since ``since``).
        """
        owner = self._owner
        with owner.lock:
            if self.signalled or self.closed:
                self.signalled = False
                return True
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._future, self._loop = future, loop
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout=max(0.0, timeout))
        except TimeoutError:
            pass
        finally:
            with owner.lock:
                self._future = self._loop = None
                woken = self.signalled
                self.signalled = False
        return woken

    def wait_blocking(self, timeout: float) -> bool:
        """:meth:`wait` for a thread: block until woken (``True``) or ``timeout`` seconds pass."""
        owner = self._owner
        with owner.lock:
            if self.signalled or self.closed:
                self.signalled = False
                return True
            event = self._event = threading.Event()
        event.wait(max(0.0, timeout))
        with owner.lock:
            self._event = None
            woken = self.signalled
            self.signalled = False
        return woken

    def pass_on(self) -> None:
        """Wake the next waiter of this group (this one found something; there may be more)."""
        self._owner.pass_on(self)

    def close(self) -> None:
        """Leave; a wake-up this waiter received and did not use goes to the next in line."""
        self._owner.remove(self)

    def _wake(self) -> None:
        """Mark woken and rouse whatever waits (the owner's lock is held)."""
        self.signalled = True
        future, loop, event = self._future, self._loop, self._event
        if future is not None and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(_resolve, future)
        if event is not None:
            event.set()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Wakeup:
    """The wake-ups of one storage: generations, waiters, timers, the cross-process source."""

    def __init__(self, source: WakeSource | None = None) -> None:
        self.lock = threading.Lock()
        self.source = source
        self._generations: dict[str, int] = {}
        self._epoch = 0  # added to every topic's generation: notify_all() moves them all
        # topic -> group -> waiters in arrival order (group None: woken by every notify)
        self._waiters: dict[str, dict[Hashable | None, list[Waiter]]] = {}
        self._timers: list[tuple[float, str]] = []  # (monotonic deadline, topic), a heap
        self._due: dict[str, float] = {}  # the earliest pending timer per topic
        self._timer_cond = threading.Condition(self.lock)
        self._timer_thread: threading.Thread | None = None
        self._closed = False
        self.notified = 0
        """How many topic notifications were delivered (tests, benchmarks)."""

    # -- signalling -------------------------------------------------------------------------
    def generation(self, topic: str) -> int:
        """How many times ``topic`` was notified in this process (read it before you look)."""
        with self.lock:
            return self._epoch + self._generations.get(topic, 0)

    def notify(self, topics: Iterable[str]) -> None:
        """Wake the waiters of ``topics``: one per group, every ungrouped one.

        Called by the storage after a commit (and by a :class:`WakeSource` for another
        process's commit, and by the timer thread). Thread-safe; never blocks on a waiter.
        """
        with self.lock:
            for topic in topics:
                self._generations[topic] = self._generations.get(topic, 0) + 1
                self.notified += 1
                groups = self._waiters.get(topic)
                if not groups:
                    continue
                for group, members in groups.items():
                    if group is None:
                        for member in members:
                            member._wake()
                        continue
                    for member in members:
                        if not member.signalled:
                            member._wake()
                            break

    def notify_all(self) -> None:
        """Notify every topic, also those nobody waits on or ever named here.

        For a source that cannot say what it missed (a listener that reconnected, a
        notification too large to name its topics): every generation moves, so a waiter that
        looked before and registers after starts out woken, and every waiter now is woken
        (one per group, every ungrouped one).
        """
        with self.lock:
            self._epoch += 1
            self.notified += 1
            for groups in self._waiters.values():
                for group, members in groups.items():
                    for member in members:
                        if not member.signalled:
                            member._wake()
                            if group is not None:
                                break

    def notify_at(self, topic: str, delay_s: float) -> None:
        """Notify ``topic`` after ``delay_s`` seconds (something becomes due by time alone).

        Only the earliest pending time per topic is kept: the waiter it wakes looks, and
        schedules the next one it finds.
        """
        when = time.monotonic() + max(0.0, delay_s)
        with self.lock:
            if self._closed:
                return
            current = self._due.get(topic)
            if current is not None and current <= when:
                return
            self._due[topic] = when
            heapq.heappush(self._timers, (when, topic))
            if self._timer_thread is None:
                self._timer_thread = threading.Thread(
                    target=self._run_timers, name="agent-task-wakeup-timer", daemon=True
                )
                self._timer_thread.start()
            self._timer_cond.notify()

    def _run_timers(self) -> None:
        with self.lock:
            while not self._closed:
                if not self._timers:
                    self._timer_cond.wait()
                    continue
                when, topic = self._timers[0]
                left = when - time.monotonic()
                if left > 0:
                    self._timer_cond.wait(left)
                    continue
                heapq.heappop(self._timers)
                if self._due.get(topic) != when:
                    continue  # superseded by an earlier one that already fired
                del self._due[topic]
                self.lock.release()
                try:
                    self.notify([topic])
                finally:
                    self.lock.acquire()

    # -- waiters ----------------------------------------------------------------------------
    def waiter(
        self, topic: str, *, group: Hashable | None = None, since: int | None = None
    ) -> Waiter:
        """Register a waiter of ``topic`` (in ``group``); woken already if notified after ``since``.

        ``since`` is :meth:`generation` read before the caller looked; ``None`` means now.
        """
        waiter = Waiter(self, topic, group)
        started = False
        with self.lock:
            groups = self._waiters.setdefault(topic, {})
            first = not groups
            groups.setdefault(group, []).append(waiter)
            if since is not None and self._epoch + self._generations.get(topic, 0) > since:
                waiter.signalled = True
            topics = frozenset(self._waiters) if first else None
        if self.source is not None:
            started = self.source.start(self)
            if topics is not None:
                self.source.watch(topics)
        if started:
            with self.lock:
                waiter.signalled = True  # a commit before the source listened may be unheard
        return waiter

    def waiting(self, topic: str | None = None) -> int:
        """How many waiters are registered (for ``topic``, or in all)."""
        with self.lock:
            groups = (
                list(self._waiters.values()) if topic is None else [self._waiters.get(topic, {})]
            )
            return sum(len(members) for g in groups for members in g.values())

    def pass_on(self, waiter: Waiter) -> None:
        """Wake the next unwoken waiter of ``waiter``'s group (after ``waiter``)."""
        with self.lock:
            self._pass_on(waiter)

    def _pass_on(self, waiter: Waiter) -> None:
        if waiter.group is None:
            return
        members = self._waiters.get(waiter.topic, {}).get(waiter.group, [])
        for member in members:
            if member is not waiter and not member.signalled:
                member._wake()
                return

    def remove(self, waiter: Waiter) -> None:
        """Unregister ``waiter``; a wake-up it did not use goes to the next of its group."""
        topics = None
        with self.lock:
            if waiter.closed:
                return
            waiter.closed = True
            groups = self._waiters.get(waiter.topic)
            if groups is None:
                return
            members = groups.get(waiter.group, [])
            with contextlib.suppress(ValueError):
                members.remove(waiter)
            if waiter.signalled:
                self._pass_on(waiter)
            if not members:
                groups.pop(waiter.group, None)
            if not groups:
                del self._waiters[waiter.topic]
                topics = frozenset(self._waiters)
        if topics is not None and self.source is not None:
            self.source.watch(topics)

    def watched(self) -> frozenset[str]:
        """The topics someone waits on now."""
        with self.lock:
            return frozenset(self._waiters)

    def close(self) -> None:
        """Stop the timer thread and the source; wake every waiter (they look once more)."""
        with self.lock:
            self._closed = True
            self._timer_cond.notify_all()
            for groups in self._waiters.values():
                for members in groups.values():
                    for member in members:
                        member._wake()
        if self.source is not None:
            self.source.close()


def merge_counts(into: dict[str, int], counts: Mapping[str, int]) -> dict[str, int]:
    """Keep the larger counter per topic (a helper for sources that track counters).

    >>> merge_counts({"a": 2}, {"a": 1, "b": 4})
    {'a': 2, 'b': 4}
    """
    for topic, value in counts.items():
        if value > into.get(topic, -1):
            into[topic] = value
    return into
