"""The wake-up: a counter the front door bumps after each commit; streams wait for it to move.

A stream (or an MCP listener) with nothing to send waits on the :class:`Wakeup` of its
service instead of polling the journal: :meth:`Wakeup.notify` runs after every committed
write transaction of the service (:attr:`taskcore.service.Service.commit_listeners`), so a
waiter in the same process sees an event within one loop turn. Commits of *other*
processes (another replica on the same PostgreSQL database) do not reach it; a waiter
therefore also wakes every :data:`~taskcore.limits.EVENTS_POLL_MS` and looks for itself.

This is the small interface the stream is built behind. A store-level signal (LISTEN/NOTIFY
on PostgreSQL, which wakes waiters of every replica) plugs in by calling :meth:`notify`
when it fires; nothing else changes.

Async waiters are woken through their own event loop (one ``call_soon_threadsafe`` per loop
per burst of commits, however many waiters the loop has); threads wait on a condition.

>>> wakeup = Wakeup()
>>> seen = wakeup.version
>>> wakeup.notify()
>>> wakeup.wait_sync(seen, 0.01) > seen
True
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["Wakeup"]


class _LoopWaiters:
    """The async waiters of one event loop, woken together."""

    __slots__ = ("events", "loop", "scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.events: set[asyncio.Event] = set()
        self.scheduled = False

    def fire(self) -> None:
        self.scheduled = False
        for event in self.events:
            event.set()


class Wakeup:
    """A commit counter that waiters block on (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._condition = threading.Condition(self._lock)
        self._version = 0
        self._loops: dict[asyncio.AbstractEventLoop, _LoopWaiters] = {}

    @property
    def version(self) -> int:
        """How many notifications so far (compare with a value seen earlier)."""
        return self._version

    def notify(self) -> None:
        """Something committed: wake every waiter (cheap when nobody waits)."""
        with self._lock:
            self._version += 1
            self._condition.notify_all()
            if not self._loops:
                return
            due = [w for w in self._loops.values() if not w.scheduled]
            for waiters in due:
                waiters.scheduled = True
        for waiters in due:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there
                waiters.loop.call_soon_threadsafe(waiters.fire)

    async def wait(self, seen: int, timeout: float) -> int:
        """Wait until the version moves past ``seen`` or ``timeout`` seconds pass."""
        if self._version != seen:
            return self._version
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        with self._lock:
            if self._version != seen:
                return self._version
            waiters = self._loops.get(loop)
            if waiters is None:
                waiters = self._loops[loop] = _LoopWaiters(loop)
            waiters.events.add(event)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)
        finally:
            with self._lock:
                waiters.events.discard(event)
                if not waiters.events:
                    self._loops.pop(loop, None)
        return self._version

    def wait_sync(self, seen: int, timeout: float) -> int:
        """:meth:`wait` for a thread."""
        with self._condition:
            self._condition.wait_for(lambda: self._version != seen, timeout)
            return self._version
