"""Waiting calls: a call with nothing to answer yet waits for a wake-up, and is audited once.

An operation declared ``waits`` (``agenttask.claimNext`` with ``waitMs``) may answer
:class:`~taskcore.registry.Wait` instead of a result: nothing to hand out yet. The front door
then rolls the attempt's transaction back (it wrote nothing, and no audit event is written
for it) and raises :class:`~taskcore.registry.CallPending`. The loop here waits for a
wake-up of the topic the attempt named (:mod:`taskcore.store.wakeup`), for the time something
becomes due, or for the call's deadline, and makes the next attempt; the attempt that
answers (a claimed task, or ``claimed: false`` once the deadline passed) is the call's only
audited one. While it waits it holds no transaction, no writer lock and no thread:
:func:`wait_async` awaits on the adapter's event loop and runs each attempt in the adapter's
worker threads; :func:`wait_blocking` is the same loop for a caller that has a thread anyway
(an in-process call, the CLI's local door).

Waiting calls are bounded (:class:`WaitSlots`): per token and per server. Past a bound the
first attempt is refused with a typed error (``RATE_LIMITED`` for the token's bound,
``OVERLOADED`` for the server's, each with a retry time), audited as the call's event.

>>> slots = WaitSlots(per_token=1, total=5)
>>> slots.take("tok")
>>> slots.take("tok")
Traceback (most recent call last):
taskcore.errors.TaskError: this token already holds 1 waiting claims on this server (the limit); retry without waitMs or once one has answered
>>> slots.give("tok")
>>> slots.held()
0
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import MCP_PROGRESS_INTERVAL_MS, RETRY_AFTER_OVERLOADED_SECONDS
from taskcore.registry import CallPending

if TYPE_CHECKING:
    from taskcore.store.storage import Storage
    from taskcore.store.wakeup import Waiter, Wakeup

__all__ = ["WaitSlots", "WaitingCall", "WaitingDoor", "wait_async", "wait_blocking"]

T = TypeVar("T")


class WaitingDoor(Protocol):
    """What the waiting loop needs of the front door (:class:`~taskcore.service.Service`).

    A protocol: the service imports this module, never the other way round.
    """

    @property
    def storage(self) -> Storage:
        """The journal whose wake-ups a waiting call waits for."""
        ...

    @property
    def waiters(self) -> WaitSlots:
        """The bounds on waiting calls, per token and in all."""
        ...


class WaitSlots:
    """How many waiting calls are open, per token and in all; refuses past the bounds."""

    def __init__(self, *, per_token: int, total: int) -> None:
        self.per_token = per_token
        self.total = total
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self._count = 0

    def take(self, token_id: str) -> None:
        """Hold one slot for ``token_id``, or raise the typed refusal."""
        with self._lock:
            mine = self._held.get(token_id, 0)
            if mine >= self.per_token:
                raise TaskError(
                    ErrorCode.RATE_LIMITED,
                    f"this token already holds {mine} waiting claims on this server (the "
                    "limit); retry without waitMs or once one has answered",
                    retry_after=1,
                )
            if self._count >= self.total:
                raise TaskError(
                    ErrorCode.OVERLOADED,
                    f"this server already holds {self._count} waiting claims (the limit); "
                    "retry shortly, or without waitMs",
                    retry_after=RETRY_AFTER_OVERLOADED_SECONDS,
                )
            self._held[token_id] = mine + 1
            self._count += 1

    def give(self, token_id: str) -> None:
        """Return a slot :meth:`take` gave ``token_id``."""
        with self._lock:
            mine = self._held.get(token_id, 0)
            if mine <= 0:
                return
            if mine == 1:
                del self._held[token_id]
            else:
                self._held[token_id] = mine - 1
            self._count -= 1

    def held(self, token_id: str | None = None) -> int:
        """Slots held (by ``token_id``, or in all)."""
        with self._lock:
            return self._count if token_id is None else self._held.get(token_id, 0)


class WaitingCall:
    """The state of one waiting call across its attempts (``ctx.waiting`` in the handler).

    The handler that found nothing asks :meth:`begin` whether to wait; the first ``True``
    takes a slot and starts the deadline. :attr:`final` is set by the loop once the deadline
    passed: that attempt must answer. A handler that found what it waited for sets
    :attr:`found`, so the wake-up is passed on to the next waiter (there may be more).
    :attr:`abandoned` is set when the caller went away (its connection closed): the last
    attempt answers at once and takes nothing, so nothing is handed to nobody, and the call
    is still audited once.
    """

    def __init__(self, slots: WaitSlots | None = None) -> None:
        self._slots = slots
        self._token: str | None = None
        self.deadline: float | None = None
        """``time.monotonic()`` at which the call stops waiting (``None``: not waiting yet)."""
        self.started = time.monotonic()
        self.final = False
        self.found = False
        self.abandoned = False
        self.attempts = 0

    def begin(self, token_id: str, wait_ms: int | None) -> bool:
        """Whether this attempt, which found nothing, should wait (else answer now).

        The first time, with ``wait_ms`` > 0, holds a slot (or raises the bound's refusal)
        and sets the deadline ``wait_ms`` from now.
        """
        if self.final or not wait_ms or wait_ms <= 0:
            return False
        if self.deadline is None:
            if self._slots is not None:
                self._slots.take(token_id)
                self._token = token_id
            self.deadline = time.monotonic() + wait_ms / 1000
            return True
        return time.monotonic() < self.deadline

    def remaining(self) -> float:
        """Seconds until the deadline (0 once it passed, or before :meth:`begin`)."""
        if self.deadline is None:
            return 0.0
        return max(0.0, self.deadline - time.monotonic())

    def release(self) -> None:
        """Give the slot back (idempotent)."""
        if self._slots is not None and self._token is not None:
            self._slots.give(self._token)
            self._token = None


def _register(wakeup: Wakeup, waiter: Waiter | None, pending: CallPending) -> Waiter:
    wait = pending.wait
    if waiter is None:
        waiter = wakeup.waiter(wait.topic, group=wait.group, since=wait.generation)
    if wait.due_in_ms is not None:
        wakeup.notify_at(wait.topic, wait.due_in_ms / 1000)
    return waiter


def _finish(waiter: Waiter | None, waiting: WaitingCall) -> None:
    if waiter is not None:
        if waiting.found:
            waiter.pass_on()
        waiter.close()
    waiting.release()


async def wait_async(
    service: WaitingDoor,
    attempt: Callable[[WaitingCall], Awaitable[T]],
    *,
    progress: Callable[[float, float], Awaitable[None]] | None = None,
    progress_every_s: float = MCP_PROGRESS_INTERVAL_MS / 1000,
    gone: Callable[[], Awaitable[None]] | None = None,
) -> T:
    """Run ``attempt`` until it answers, awaiting wake-ups between attempts (an adapter's loop).

    ``attempt`` makes one call of the front door with the :class:`WaitingCall` it is given
    (in a worker thread: ``await pool.run(service.call, ..., waiting=w)``). ``progress`` (if
    given) is awaited with ``(seconds waited, seconds allowed)`` at least every
    ``progress_every_s`` while the call waits (an MCP client's progress notifications).
    ``gone`` (if given) returns when the caller went away (an HTTP disconnect): the call
    stops waiting and its last attempt takes nothing (:attr:`WaitingCall.abandoned`).
    Waiting calls are bounded by ``service.waiters``.
    """
    wakeup = service.storage.wakeup
    waiting = WaitingCall(service.waiters)
    waiter: Waiter | None = None
    left_us: asyncio.Future[None] | None = None
    try:
        while True:
            waiting.attempts += 1
            try:
                return await attempt(waiting)
            except CallPending as pending:
                waiter = _register(wakeup, waiter, pending)
            if gone is not None and left_us is None:
                left_us = asyncio.ensure_future(gone())
            while True:
                left = waiting.remaining()
                if left <= 0 or (left_us is not None and left_us.done()):
                    waiting.final = True
                    waiting.abandoned = left_us is not None and left_us.done()
                    break
                step = min(left, progress_every_s) if progress is not None else left
                if await _wait(waiter, step, left_us):
                    break
                if progress is not None and waiting.remaining() > 0:
                    assert waiting.deadline is not None
                    await progress(
                        time.monotonic() - waiting.started, waiting.deadline - waiting.started
                    )
    finally:
        if left_us is not None:
            left_us.cancel()
        _finish(waiter, waiting)


async def _wait(waiter: Waiter, timeout: float, left_us: asyncio.Future[None] | None) -> bool:
    """Wait for a wake-up (``True``), the timeout or the caller leaving (``False``)."""
    if left_us is None:
        return await waiter.wait(timeout)
    woken = asyncio.ensure_future(waiter.wait(timeout))
    racing: list[asyncio.Future[Any]] = [woken, left_us]
    try:
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not woken.done():
            woken.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await woken
    return bool(woken.result()) if not woken.cancelled() else False


def wait_blocking(service: WaitingDoor, attempt: Callable[[WaitingCall], T]) -> T:
    """:func:`wait_async` for a caller that has its own thread: blocks between attempts."""
    wakeup = service.storage.wakeup
    waiting = WaitingCall(service.waiters)
    waiter: Waiter | None = None
    try:
        while True:
            waiting.attempts += 1
            try:
                return attempt(waiting)
            except CallPending as pending:
                waiter = _register(wakeup, waiter, pending)
            left = waiting.remaining()
            if left <= 0 or not waiter.wait_blocking(left):
                waiting.final = waiting.remaining() <= 0
    finally:
        _finish(waiter, waiting)
