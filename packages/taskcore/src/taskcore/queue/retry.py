"""Retries with back-off and the lapsed lease of a retrying task (docs/queue.md "Retries").

A task created with ``maxAttempts`` above 1 is *retrying*. Its ``attempt`` counts runs from 1.
A failed attempt (a ``FAILED`` checkpoint, a runaway requeue, a lapsed lease) below the last
puts it back to ``QUEUED`` with ``runAt`` = now + back-off and ``attempt`` + 1; at the last it
stays ``FAILED`` (the dead-letter set, retried by ``agenttask.requeue``). A task with
``maxAttempts`` 1 (the default) behaves as the seed says: ``FAILED`` is final, a lapsed lease or
a runaway requeue is claimable again at once.

The back-off of attempt ``n`` (the one that failed) is drawn with full jitter: uniform in
``[0, cap(n)]`` where ``cap(n) = min(maxMs, initialMs * multiplier ** (n - 1))``.

A lapsed lease is observed at read time (nothing commits when time passes), so the back-off
it gets is drawn when the task is claimed (``retry_delay_ms``): the task is claimable again
``retry_delay_ms`` after the lease expired, and reads so (``runAtMs``, ``attempt`` + 1), or,
at the last attempt, reads ``FAILED``.

>>> backoff_cap(1, initial_ms=1000, max_ms=60_000, multiplier=2.0)
1000
>>> backoff_cap(4, initial_ms=1000, max_ms=60_000, multiplier=2.0)
8000
>>> backoff_cap(40, initial_ms=1000, max_ms=60_000, multiplier=2.0)
60000
>>> backoff_delay(3, initial_ms=1000, max_ms=60_000, multiplier=2.0, draw=lambda n: n - 1)
4000
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from taskcore.store.queue_api import TaskRecord

__all__ = [
    "backoff_cap",
    "backoff_delay",
    "lapsed_exhausted",
    "lapsed_retry_at",
    "next_delay",
    "retries",
]


def backoff_cap(attempt: int, *, initial_ms: int, max_ms: int, multiplier: float) -> int:
    """The largest back-off after attempt ``attempt`` (1-based) fails; never above ``max_ms``.

    Computed step by step, stopping at ``max_ms``, so a large attempt never overflows.
    """
    cap = float(min(initial_ms, max_ms))
    for _ in range(1, attempt):
        if cap >= max_ms:
            break
        cap = min(cap * multiplier, float(max_ms))
    return int(cap)


def backoff_delay(
    attempt: int,
    *,
    initial_ms: int,
    max_ms: int,
    multiplier: float,
    draw: Callable[[int], int] = secrets.randbelow,
) -> int:
    """The back-off after attempt ``attempt`` fails: full jitter, ``draw(cap + 1)``."""
    cap = backoff_cap(attempt, initial_ms=initial_ms, max_ms=max_ms, multiplier=multiplier)
    return draw(cap + 1)


def retries(task: TaskRecord) -> bool:
    """Whether the task was created to be retried (``maxAttempts`` above 1)."""
    return task.max_attempts > 1


def next_delay(task: TaskRecord) -> int:
    """A fresh back-off for the task's current attempt failing (0 for a task that never retries)."""
    if not retries(task) or task.attempt >= task.max_attempts:
        return 0
    return backoff_delay(
        task.attempt,
        initial_ms=task.backoff_initial_ms,
        max_ms=task.backoff_max_ms,
        multiplier=task.backoff_multiplier,
    )


def _lapsed(task: TaskRecord, now_ms: int) -> bool:
    return (
        task.status == "LEASED"
        and task.lease_expires_at_ms is not None
        and task.lease_expires_at_ms <= now_ms
    )


def lapsed_exhausted(task: TaskRecord, now_ms: int) -> bool:
    """Whether a retrying task's lease lapsed at its last attempt (it reads ``FAILED``)."""
    return _lapsed(task, now_ms) and retries(task) and task.attempt >= task.max_attempts


def lapsed_retry_at(task: TaskRecord, now_ms: int) -> int | None:
    """When a retrying task whose lease lapsed below its last attempt is claimable again."""
    if not _lapsed(task, now_ms) or not retries(task) or task.attempt >= task.max_attempts:
        return None
    assert task.lease_expires_at_ms is not None
    return task.lease_expires_at_ms + task.retry_delay_ms


# -- what the lease verbs write (leases.py calls these; each returns changes for write_task) --


def claim_changes(task: TaskRecord, now_ms: int) -> dict[str, int]:
    """A claim of a retrying task: a lapsed lease counts its attempt; a fresh back-off drawn.

    The back-off (``retry_delay_ms``) is what the task waits if *this* lease lapses.
    """
    if not retries(task):
        return {}
    changes: dict[str, int] = {}
    attempt = task.attempt
    again = lapsed_retry_at(task, now_ms)
    if again is not None:
        attempt += 1
        changes["run_at_ms"] = again
    delay = 0
    if attempt < task.max_attempts:
        delay = backoff_delay(
            attempt,
            initial_ms=task.backoff_initial_ms,
            max_ms=task.backoff_max_ms,
            multiplier=task.backoff_multiplier,
        )
    return {**changes, "attempt": attempt, "retry_delay_ms": delay}


def failure_changes(task: TaskRecord, now_ms: int) -> dict[str, int] | None:
    """A failed attempt of a retrying task below its last: the next attempt's changes.

    ``None``: no retry (the task never retries, or this was its last attempt), the failure
    stands. Otherwise ``runAt`` = now + a fresh back-off and ``attempt`` + 1.
    """
    if not retries(task) or task.attempt >= task.max_attempts:
        return None
    delay = next_delay(task)
    return {"run_at_ms": now_ms + delay, "attempt": task.attempt + 1, "retry_delay_ms": 0}


def not_due_until(task: TaskRecord, now_ms: int) -> int | None:
    """When a task that reads ``QUEUED`` becomes claimable, if that is after ``now_ms``."""
    at = lapsed_retry_at(task, now_ms)
    if at is None and task.status == "QUEUED":
        at = task.run_at_ms
    return at if at is not None and at > now_ms else None
