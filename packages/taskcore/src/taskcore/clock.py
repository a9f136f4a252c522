"""Injectable time. Leases and expiries are integers of milliseconds since the Unix epoch.

>>> clock = FakeClock(1_000)
>>> clock.advance(250)
>>> clock.now_ms()
1250
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "FakeClock", "SystemClock"]


class Clock(Protocol):
    """Anything that tells the time in integer milliseconds."""

    def now_ms(self) -> int:
        """Return the current time in milliseconds since the Unix epoch."""
        ...


class SystemClock:
    """The wall clock."""

    def now_ms(self) -> int:
        """Return ``time.time_ns() // 1_000_000``."""
        return time.time_ns() // 1_000_000


class FakeClock:
    """A clock that only moves when told to (tests, replay)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        """Return the fake time."""
        with self._lock:
            return self._now

    def advance(self, ms: int) -> None:
        """Move the fake time forward by ``ms`` milliseconds."""
        if ms < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            self._now += ms

    def set(self, now_ms: int) -> None:
        """Set the fake time (never backwards)."""
        with self._lock:
            if now_ms < self._now:
                raise ValueError("time only moves forward")
            self._now = now_ms
