"""Scheduled tasks and retries at create, and paused verbs (docs/queue.md).

The sections "Scheduled tasks", "Retries" and "Pause".

* ``runAt`` (epoch ms) or ``delayMs`` on ``agenttask.create``: the task is ``QUEUED`` but not
  claimable before that time (``runAtMs`` on every read); both at once is ``BAD_INPUT``.
* ``maxAttempts`` and ``backoff`` on create: see :mod:`taskcore.queue.retry`.
* ``agenttask.pause`` / ``agenttask.resume`` ``{verb}`` (admin): a paused verb's tasks are not
  claimable (``claimNext`` simply finds nothing); resuming wakes waiting claimers;
  ``agenttask.paused`` lists the paused verbs.

>>> from taskcore.queue.requests import CreateIn
>>> schedule_of(CreateIn(verb="agent.run", delay_ms=500), 1000)["run_at_ms"]
1500
>>> schedule_of(CreateIn(verb="agent.run", run_at=5, delay_ms=1), 0)
Traceback (most recent call last):
taskcore.errors.TaskError: send runAt or delayMs, not both at $.delayMs
"""

from __future__ import annotations

import math
from typing import Any

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import BACKOFF_MULTIPLIER_MAX, QUEUE_DELAY_MAX_MS
from taskcore.queue.common import QueueCall
from taskcore.queue.requests import BackoffIn, CreateIn
from taskcore.queue.types import PausedList, PausedVerbView, VerbPaused
from taskcore.queue.verb_registry import require_registered
from taskcore.store.queue_api import PausedVerbRecord

__all__ = [
    "REQUEUED",
    "list_paused",
    "pause",
    "resume",
    "schedule_of",
]

REQUEUED: dict[str, Any] = {"attempt": 1, "run_at_ms": None, "retry_delay_ms": 0}
"""What ``agenttask.requeue`` resets: a fresh attempt budget, claimable at once."""


def _backoff(backoff: BackoffIn) -> dict[str, Any]:
    m = backoff.multiplier
    if not math.isfinite(m) or not 1.0 <= m <= BACKOFF_MULTIPLIER_MAX:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            f"multiplier must be from 1.0 to {BACKOFF_MULTIPLIER_MAX}",
            path="$.backoff.multiplier",
        )
    if backoff.max_ms < backoff.initial_ms:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"maxMs ({backoff.max_ms}) is below initialMs ({backoff.initial_ms}); raise it",
            path="$.backoff.maxMs",
        )
    return {
        "backoff_initial_ms": backoff.initial_ms,
        "backoff_max_ms": backoff.max_ms,
        "backoff_multiplier": float(m),
    }


def schedule_of(request: CreateIn, now_ms: int) -> dict[str, Any]:
    """The scheduling and retry columns of a new task (``TaskRecord`` keywords)."""
    run_at = request.run_at
    if request.delay_ms is not None:
        if run_at is not None:
            raise TaskError(
                ErrorCode.BAD_INPUT, "send runAt or delayMs, not both", path="$.delayMs"
            )
        run_at = now_ms + request.delay_ms
    elif run_at is not None and run_at - now_ms > QUEUE_DELAY_MAX_MS:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            f"runAt is more than {QUEUE_DELAY_MAX_MS} ms ahead; schedule it nearer",
            path="$.runAt",
        )
    out: dict[str, Any] = {"run_at_ms": run_at, "max_attempts": request.max_attempts or 1}
    if request.backoff is not None:
        out.update(_backoff(request.backoff))
    return out


# -- paused verbs ------------------------------------------------------------------------------


def pause(call: QueueCall, verb: str) -> VerbPaused:
    """Pause ``verb`` (a registered one) in the caller's workspace (idempotent)."""
    require_registered(call, verb)
    record = PausedVerbRecord(
        workspace=call.workspace, verb=verb, paused_by=call.actor.token_id, paused_at_ms=call.now_ms
    )
    changed = call.tx.queue.pause_verb(record)
    return VerbPaused(verb=verb, paused=True, changed=changed)


def resume(call: QueueCall, verb: str) -> VerbPaused:
    """Resume ``verb`` (idempotent); waiting claimers are woken by the commit."""
    changed = call.tx.queue.resume_verb(call.workspace, verb)
    return VerbPaused(verb=verb, paused=False, changed=changed)


def list_paused(call: QueueCall) -> PausedList:
    """The paused verbs of the caller's workspace."""
    return PausedList(
        verbs=tuple(
            PausedVerbView(verb=r.verb, paused_by=r.paused_by, paused_at_ms=r.paused_at_ms)
            for r in call.tx.queue.paused_verbs(call.workspace)
        )
    )
