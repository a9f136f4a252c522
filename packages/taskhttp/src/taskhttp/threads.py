"""Worker threads for the synchronous journal: one lean hop per call.

The journal is synchronous, so every handler runs the service in a worker thread to keep the
event loop free. ``anyio.to_thread.run_sync`` costs about 45 us of CPU per hop on the
development VM (a capacity limiter, a cancel scope, a context copy, a checkpoint); this pool
costs about 16 us: a queue of ``(loop, future, call)`` items, worker threads started on
demand up to a bound, and the result handed back with ``call_soon_threadsafe``. Semantics:

* at most ``max_threads`` threads (anyio's default limiter is 40 tokens too); a call that
  finds them all busy waits in the queue, in arrival order;
* the awaiting coroutine gets the call's return value or its exception;
* a cancelled awaiter does not stop the call: it runs to its end in its thread (as with
  anyio, where the call also runs to its end) and its result is dropped;
* idle threads wait for work; :meth:`WorkerPool.close` stops them once the calls queued
  before it are done (the application's lifespan does so at shutdown; a later call starts
  new ones), and they are daemon threads, so an application that never runs its lifespan
  (a test client without ``with``) does not keep the process alive.

It serves asyncio loops only (uvicorn's, and the test client's default backend).

>>> import asyncio
>>> pool = WorkerPool(max_threads=2)
>>> asyncio.run(pool.run(sum, [1, 2, 3]))
6
>>> pool.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DEFAULT_MAX_THREADS", "WorkerPool"]

T = TypeVar("T")

DEFAULT_MAX_THREADS = 40
"""The bound on worker threads (anyio's default number of thread tokens)."""

_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class _Crew:
    """The threads started since the last :meth:`WorkerPool.close`, and their queue."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self.threads = 0
        self.idle = 0


class WorkerPool:
    """Threads that run synchronous calls for coroutines on any asyncio loop."""

    def __init__(self, max_threads: int = DEFAULT_MAX_THREADS) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self.max_threads = max_threads
        self._lock = threading.Lock()
        self._crew = _Crew()

    @property
    def threads(self) -> int:
        """How many worker threads the pool has started and not yet stopped."""
        return self._crew.threads

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` in a worker thread and return its result."""
        call = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            crew = self._crew
            if crew.idle:
                crew.idle -= 1
                start = False
            else:
                start = crew.threads < self.max_threads
                if start:
                    crew.threads += 1
        crew.queue.put((loop, future, call))
        if start:
            threading.Thread(
                target=self._work, args=(crew,), name="taskhttp-worker", daemon=True
            ).start()
        return await future

    def _work(self, crew: _Crew) -> None:
        get = crew.queue.get
        while True:
            item = get()
            if item is None:
                return
            loop, future, call = item
            try:
                result, error = call(), None
            except BaseException as exc:  # handed to the awaiting coroutine
                result, error = None, exc
            with self._lock:
                crew.idle += 1  # before answering: the awaiter's next call finds it idle
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting
                loop.call_soon_threadsafe(_settle, future, result, error)

    def close(self) -> None:
        """Stop the threads once the calls queued so far are done.

        A later call starts new threads.
        """
        with self._lock:
            crew, self._crew = self._crew, _Crew()
        for _ in range(crew.threads):
            crew.queue.put(None)
