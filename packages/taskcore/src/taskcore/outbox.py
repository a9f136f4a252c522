"""The outbox worker: side effects outside the journal, delivered after the fact, at least once.

A side effect that leaves the journal (a commit status on a forge, a webhook) is a row
written in the transaction of the event it reports, or derived from the committed event
log, so an event that rolls back causes nothing and a crash loses nothing. A worker then
delivers the rows outside any transaction:

1. **lease** the due rows in one write transaction (their next attempt moves ``lease_ms``
   ahead), so a second worker on the same journal (another replica) leaves them alone;
2. **send** each row (no transaction held, no lock);
3. **record** the outcome in a write transaction of its own: delivered, refused (a 4xx
   that retrying cannot fix, where the kind of row says so), exhausted (out of attempts or
   past its deadline: given up), or queued again after a back-off.

A crash between a send and its record sends the row again: delivery is at least once, and
each kind of row says how a receiver recognises a repeat (a forge status is idempotent, a
webhook carries its ``webhook-id``). :class:`OutboxWorker` is that loop;
a kind of row subclasses it with its table (``next_due``, ``due``, ``hold``,
``settle``) and its transport (``send``). The forge statuses
(:class:`taskcore.evidence.forge_delivery.ForgeDelivery`) and the webhooks
(:class:`taskcore.events.webhook_delivery.WebhookDelivery`) are the two.

>>> BackoffPolicy(base_ms=1000, cap_ms=5000, attempts_max=5).delay_ms(3)
4000
>>> policy = BackoffPolicy(base_ms=5000, cap_ms=3_600_000, attempts_max=None,
...                        deadline_ms=86_400_000)
>>> policy.exhausted(attempts=40, age_ms=86_399_999), policy.exhausted(attempts=1, age_ms=86_400_000)
(False, True)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import attrs

from taskcore.clock import Clock, SystemClock
from taskcore.errors import TaskError
from taskcore.limits import FORGE_ATTEMPTS_MAX, FORGE_BACKOFF_BASE_MS, FORGE_BACKOFF_CAP_MS
from taskcore.store.storage import Storage, Transaction

__all__ = ["Attempt", "BackoffPolicy", "OutboxRow", "OutboxWorker", "Sent"]


@attrs.frozen(kw_only=True)
class BackoffPolicy:
    """Retry delays ``min(cap_ms, base_ms * 2**(attempts-1))``, and when to give up.

    A row is exhausted after ``attempts_max`` attempts (``None``: no count) or once it is
    ``deadline_ms`` old (``None``: no deadline), whichever comes first. The defaults are the
    forge statuses' (the first outbox); webhooks bring their own.
    """

    base_ms: int = FORGE_BACKOFF_BASE_MS
    cap_ms: int = FORGE_BACKOFF_CAP_MS
    attempts_max: int | None = FORGE_ATTEMPTS_MAX
    deadline_ms: int | None = None

    def delay_ms(self, attempts: int) -> int:
        """The delay after the ``attempts``-th failed attempt."""
        return int(min(self.cap_ms, self.base_ms * 2 ** max(0, min(attempts - 1, 40))))

    def exhausted(self, *, attempts: int, age_ms: int) -> bool:
        """Whether a row that failed its ``attempts``-th attempt at ``age_ms`` is given up."""
        if self.attempts_max is not None and attempts >= self.attempts_max:
            return True
        return self.deadline_ms is not None and age_ms >= self.deadline_ms


@attrs.frozen(kw_only=True)
class Attempt:
    """What one attempt of one row came to (``status`` is the row's status after it)."""

    seq: int
    status: str
    last_error: str | None
    http_status: int | None


@attrs.frozen(kw_only=True)
class Sent:
    """The outcome of one send.

    ``error`` is a fixed category (``None`` for a 2xx); ``http_status`` the answer's status
    when there was one; ``retry_after_ms`` the ``Retry-After`` it asked for.
    """

    error: str | None
    http_status: int | None = None
    retry_after_ms: int | None = None


class OutboxRow(Protocol):
    """What the worker reads of a row: its key and how many attempts it had."""

    @property
    def seq(self) -> int:
        """The row's key."""
        ...

    @property
    def attempts(self) -> int:
        """Attempts so far."""
        ...


R = TypeVar("R", bound=OutboxRow)


class OutboxWorker(Generic[R]):
    """Lease due rows, send each once outside any transaction, record each outcome.

    Subclasses give the table (:meth:`next_due`, :meth:`due`, :meth:`hold`, :meth:`settle`)
    and the transport (:meth:`send`); :meth:`outcome` decides what an attempt means and
    may be overridden. ``deliver_due`` is one round; ``start`` runs rounds in a thread.
    """

    thread_name = "outbox"
    refused_status: str | None = "refused"
    """The status of a 4xx not in :attr:`retried_client_errors` (never retried); ``None``:
    every failure is retried."""
    retried_client_errors: frozenset[int] = frozenset({429})
    """The 4xx answers that are retried all the same."""
    exhausted_status = "given_up"
    """The status of a row that ran out of attempts or time."""

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock | None = None,
        policy: BackoffPolicy | None = None,
        lease_ms: int = 60_000,
        batch: int = 16,
        poll_ms: int = 1_000,
    ) -> None:
        self.storage = storage
        self.clock: Clock = clock or SystemClock()
        self.policy = policy or BackoffPolicy()
        self.lease_ms = lease_ms
        self.batch = batch
        self.poll_ms = poll_ms
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what a kind of row provides -------------------------------------------------------
    def next_due(self, tx: Transaction) -> int | None:
        """The earliest next attempt of a waiting row, or ``None``."""
        raise NotImplementedError

    def due(self, tx: Transaction, now_ms: int, limit: int) -> tuple[R, ...]:
        """The rows due at ``now_ms``, oldest first, at most ``limit``."""
        raise NotImplementedError

    def hold(self, tx: Transaction, row: R, until_ms: int, now_ms: int) -> None:
        """Lease ``row`` until ``until_ms`` (its next attempt moves there)."""
        raise NotImplementedError

    def send(self, row: R) -> Sent:
        """Send ``row`` once; never raises for the remote's failures (they are outcomes)."""
        raise NotImplementedError

    def settle(
        self, tx: Transaction, row: R, status: str, sent: Sent, next_at_ms: int, now_ms: int
    ) -> str | None:
        """Write an attempt's outcome; return the row's final status (``None``: row gone)."""
        raise NotImplementedError

    def before_round(self) -> None:
        """Work to do at the start of each round (the webhooks' fan-out); nothing here."""

    # -- the loop ----------------------------------------------------------------------------
    def outcome(self, row: R, sent: Sent, now_ms: int) -> tuple[str, int]:
        """The row's status after ``sent`` and its next attempt time."""
        attempts = row.attempts + 1
        http = sent.http_status
        if sent.error is None:
            return "delivered", now_ms
        if (
            self.refused_status is not None
            and http is not None
            and 400 <= http < 500
            and http not in self.retried_client_errors
        ):
            return self.refused_status, now_ms
        if self.policy.exhausted(attempts=attempts, age_ms=self.age_ms(row, now_ms)):
            return self.exhausted_status, now_ms
        delay = self.policy.delay_ms(attempts)
        if sent.retry_after_ms is not None:
            delay = max(delay, min(sent.retry_after_ms, self.policy.cap_ms))
        return "queued", now_ms + delay

    def age_ms(self, row: R, now_ms: int) -> int:
        """How old ``row`` is (for a deadline); rows without a birth time never age."""
        created = getattr(row, "created_at_ms", None)
        return 0 if created is None else now_ms - int(created)

    def lease_due(self) -> tuple[R, ...]:
        """Lease the due rows (one write transaction; none when nothing is due)."""
        now = self.clock.now_ms()
        with self.storage.read() as tx:
            next_due = self.next_due(tx)
        if next_due is None or next_due > now:
            return ()
        with self.storage.write() as tx:
            rows = self.due(tx, now, self.batch)
            for row in rows:
                self.hold(tx, row, now + self.lease_ms, now)
        return rows

    def record(self, row: R, sent: Sent) -> Attempt:
        """Record one attempt's outcome in a transaction of its own."""
        now = self.clock.now_ms()
        status, next_at = self.outcome(row, sent, now)
        with self.storage.write() as tx:
            final = self.settle(tx, row, status, sent, next_at, now)
        return Attempt(
            seq=row.seq,
            status="missing" if final is None else final,
            last_error=sent.error,
            http_status=sent.http_status,
        )

    def deliver_due(self) -> list[Attempt]:
        """One round: lease the due rows, send each once, record each outcome."""
        self.before_round()
        return [self.record(row, self.send(row)) for row in self.lease_due()]

    def wake(self) -> None:
        """Start the next round now (a new row was written in this process)."""
        self._wake.set()

    def _loop(self, on_error: Callable[[TaskError], None]) -> None:
        while not self._stop.is_set():
            try:
                self.deliver_due()
                with self.storage.read() as tx:
                    next_due = self.next_due(tx)
            except TaskError as err:  # busy or unavailable storage: try again later
                on_error(err)
                next_due = None
            wait = self.poll_ms
            if next_due is not None:
                wait = max(0, min(wait, next_due - self.clock.now_ms()))
            self._wake.wait(wait / 1000)
            self._wake.clear()

    def start(self, on_error: Callable[[TaskError], None] = lambda err: None) -> OutboxWorker[R]:
        """Run rounds in a daemon thread until :meth:`stop`."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._loop, args=(on_error,), daemon=True, name=self.thread_name
            )
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop after the current round (an in-flight request ends within its timeout)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
