"""Rate limits and the aggregated refusal tally of the network service.

Two limiters, both token buckets kept in memory per process:

* **calls per token**: every call a bearer token makes through the network doors takes one
  unit from that token's bucket (:data:`~taskcore.limits.RATE_TOKEN_CALLS_BURST` units,
  refilled at :data:`~taskcore.limits.RATE_TOKEN_CALLS_PER_SECOND`); an empty bucket is
  ``RATE_LIMITED`` (429) with ``Retry-After``.
* **refusals per client address**: every failed authentication from an address takes one
  unit from that address's bucket; once it is empty, requests from the address that do not
  authenticate are answered ``RATE_LIMITED`` instead of ``UNAUTHENTICATED`` and cost nothing
  durable. A valid token from the same address still gets in (an address can be shared).

Anonymous refusals (the caller did not authenticate) and rate-limited refusals are not
written to the audit log one row each: that was a durable write under the single writer lock
per unauthenticated request. :class:`RefusalTally` counts them in memory by (actor,
workspace, operation, outcome), bounded, and the service writes one audit event per key with
its count (``AuditEvent.calls``) at most every
:data:`~taskcore.limits.REFUSAL_TALLY_FLUSH_SECONDS`, at close, and before it counts events,
so the audit log still accounts for every call.

>>> from taskcore.clock import FakeClock
>>> clock = FakeClock()
>>> limiter = RateLimiter(rate=1.0, burst=2, clock=clock)
>>> [limiter.take("t").allowed for _ in range(3)]
[True, True, False]
>>> limiter.take("t").retry_after
1
>>> clock.advance(1000)
>>> limiter.take("t").allowed
True
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import attrs

from taskcore.clock import Clock, SystemClock
from taskcore.limits import (
    RATE_ADDRESS_REFUSALS_BURST,
    RATE_ADDRESS_REFUSALS_PER_SECOND,
    RATE_KEYS_MAX,
    RATE_TOKEN_CALLS_BURST,
    RATE_TOKEN_CALLS_PER_SECOND,
    REFUSAL_TALLY_FLUSH_SECONDS,
    REFUSAL_TALLY_KEYS_MAX,
)

__all__ = ["OVERFLOW", "Decision", "RateLimiter", "RateLimits", "RefusalTally"]

OVERFLOW = "*"
"""Actor and operation of the tally key that absorbs refusals once the tally is full."""


@attrs.frozen(kw_only=True)
class RateLimits:
    """The service's rate limits; a rate of 0 turns that limiter off.

    >>> RateLimits().token_calls_per_second
    200.0
    """

    token_calls_per_second: float = RATE_TOKEN_CALLS_PER_SECOND
    token_calls_burst: int = RATE_TOKEN_CALLS_BURST
    address_refusals_per_second: float = RATE_ADDRESS_REFUSALS_PER_SECOND
    address_refusals_burst: int = RATE_ADDRESS_REFUSALS_BURST
    keys_max: int = RATE_KEYS_MAX


@attrs.frozen
class Decision:
    """The answer of :meth:`RateLimiter.take`: allowed, or when to retry (whole seconds)."""

    allowed: bool
    retry_after: int = 0


class RateLimiter:
    """Token buckets per key (a token id or a client address), bounded in keys.

    Each key holds ``burst`` units, refilled continuously at ``rate`` per second. The least
    recently used key is forgotten past ``keys_max`` (a forgotten key starts full again,
    which only ever favours the caller). ``rate <= 0`` allows everything. Thread-safe.
    """

    def __init__(
        self,
        *,
        rate: float,
        burst: int,
        keys_max: int = RATE_KEYS_MAX,
        clock: Clock | None = None,
    ) -> None:
        self.rate = float(rate)
        self.burst = max(1, int(burst))
        self.keys_max = max(1, int(keys_max))
        self.clock: Clock = clock or SystemClock()
        self._buckets: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether this limiter limits anything."""
        return self.rate > 0

    def _level(self, key: str, now_ms: int) -> float:
        level, at_ms = self._buckets.get(key, (float(self.burst), now_ms))
        elapsed = max(0, now_ms - at_ms) / 1000.0
        return min(float(self.burst), level + elapsed * self.rate)

    def _store(self, key: str, level: float, now_ms: int) -> None:
        self._buckets[key] = (level, now_ms)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self.keys_max:
            self._buckets.popitem(last=False)

    def take(self, key: str) -> Decision:
        """Take one unit for ``key``; refuse (with a retry time) when none is left."""
        if not self.enabled:
            return Decision(True)
        now_ms = self.clock.now_ms()
        with self._lock:
            level = self._level(key, now_ms)
            if level >= 1.0:
                self._store(key, level - 1.0, now_ms)
                return Decision(True)
            self._store(key, level, now_ms)
            return Decision(False, max(1, math.ceil((1.0 - level) / self.rate)))

    def peek(self, key: str) -> Decision:
        """What :meth:`take` would answer for ``key``, without taking a unit."""
        if not self.enabled:
            return Decision(True)
        now_ms = self.clock.now_ms()
        with self._lock:
            level = self._level(key, now_ms)
        if level >= 1.0:
            return Decision(True)
        return Decision(False, max(1, math.ceil((1.0 - level) / self.rate)))

    def __len__(self) -> int:
        return len(self._buckets)


TallyKey = tuple[str, str, str, str]
"""(actor, workspace, operation, outcome) of aggregated refusals."""


class RefusalTally:
    """Counts of refusals not worth a durable write each, flushed in batches.

    At most ``keys_max`` distinct keys are held; further refusals fold into one key per
    outcome whose actor and operation are :data:`OVERFLOW` (outcomes are a closed set), so
    memory stays bounded whatever an attacker varies. A refused call that itself names the
    operation ``*`` is counted as ``'*'`` (quoted), so no caller can make a row read as the
    overflow key. :meth:`due` says when a flush is owed; :meth:`drain` hands
    the counts over (and :meth:`restore` takes them back if the write failed).

    >>> from taskcore.clock import FakeClock
    >>> tally = RefusalTally(clock=FakeClock(), keys_max=1)
    >>> tally.add("anonymous", "", "a", "UNAUTHENTICATED")
    >>> tally.add("anonymous", "", "b", "UNAUTHENTICATED")
    >>> sorted(tally.drain().items())
    [(('*', '', '*', 'UNAUTHENTICATED'), 1), (('anonymous', '', 'a', 'UNAUTHENTICATED'), 1)]
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        keys_max: int = REFUSAL_TALLY_KEYS_MAX,
        flush_seconds: float = REFUSAL_TALLY_FLUSH_SECONDS,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.keys_max = max(1, keys_max)
        self.flush_ms = int(flush_seconds * 1000)
        self._counts: dict[TallyKey, int] = {}
        self._lock = threading.Lock()
        self._last_flush_ms = self.clock.now_ms()

    def add(self, actor: str, workspace: str, operation: str, outcome: str) -> None:
        """Count one refusal."""
        if operation == OVERFLOW:
            operation = f"'{OVERFLOW}'"
        with self._lock:
            self._count((actor, workspace, operation, outcome), 1)

    def _count(self, key: TallyKey, n: int) -> None:
        if key not in self._counts and len(self._counts) >= self.keys_max:
            key = (OVERFLOW, "", OVERFLOW, key[3])
        self._counts[key] = self._counts.get(key, 0) + n

    def pending(self) -> int:
        """How many refusals are counted and not yet written."""
        with self._lock:
            return sum(self._counts.values())

    def due(self) -> bool:
        """Whether counts are waiting and the flush interval has passed."""
        with self._lock:
            if not self._counts:
                return False
            return self.clock.now_ms() - self._last_flush_ms >= self.flush_ms

    def drain(self) -> dict[TallyKey, int]:
        """Take every count (the caller writes them)."""
        with self._lock:
            counts, self._counts = self._counts, {}
            self._last_flush_ms = self.clock.now_ms()
        return counts

    def restore(self, counts: dict[TallyKey, int]) -> None:
        """Put back counts whose write failed (still bounded by ``keys_max``)."""
        with self._lock:
            for key, n in counts.items():
                self._count(key, n)
