"""The audit log read as the event log: one event per committed audit event.

An event's id is its audit ``seq``; its type is the operation; its data is what the call
did, never what it carried:

* ``id``, ``operation``, ``workspace``, ``actor`` (the token id), ``at`` (ISO 8601, UTC) and
  ``atMs``;
* ``taskId`` (the task the call named), ``statusBefore`` / ``statusAfter`` (how it moved
  that task's status; both ``null`` when it moved none);
* ``outcome`` (``OK`` or the error's code) and ``errorCode`` (the code of a refusal, else
  ``null``); ``calls`` (how many calls an aggregated refusal stands for);
* ``traceparent`` (the call's W3C trace context, when it had one).

No payload, input, result, token or secret is in the audit table, so none can be in an
event. Who may see an event: :func:`visible`. Where the log is final: :class:`Horizon`.

>>> from taskcore.store.audit_api import AuditEvent
>>> event = AuditEvent(at_ms=0, actor="t1", workspace="w", operation="agenttask.claim",
...     input_digest="d", outcome="OK", subject="at_1", status_before="QUEUED",
...     status_after="LEASED", seq=7)
>>> data = event_data(event)
>>> data["id"], data["statusBefore"], data["statusAfter"], data["at"]
(7, 'QUEUED', 'LEASED', '1970-01-01T00:00:00.000Z')
>>> matches(("agenttask.*",), "agenttask.claim"), matches(("observe.*",), "agenttask.claim")
(True, False)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from taskcore.actors import Actor, Tier
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import EVENTS_FILTERS_MAX, EVENTS_PATTERN_MAX_CHARS
from taskcore.store.audit_api import AuditEvent
from taskcore.store.storage import Storage, Transaction

__all__ = [
    "PATTERN",
    "Horizon",
    "check_patterns",
    "event_data",
    "iso_ms",
    "matches",
    "visible",
]

PATTERN = r"[A-Za-z0-9_.*-]{1,128}"
"""An operation pattern: an operation name where ``*`` stands for any run of characters."""

_PATTERN = re.compile(PATTERN)


def iso_ms(ms: int) -> str:
    """An epoch-milliseconds time as ISO 8601 UTC with milliseconds (``...Z``)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def event_data(event: AuditEvent) -> dict[str, Any]:
    """The event's public data (every key always present; ``null`` when it does not apply)."""
    return {
        "id": event.seq,
        "operation": event.operation,
        "workspace": event.workspace,
        "actor": event.actor,
        "at": iso_ms(event.at_ms),
        "atMs": event.at_ms,
        "taskId": event.subject,
        "statusBefore": event.status_before,
        "statusAfter": event.status_after,
        "outcome": event.outcome,
        "errorCode": None if event.outcome == "OK" else event.outcome,
        "calls": event.calls,
        "traceparent": event.traceparent,
    }


def check_patterns(patterns: Iterable[str], *, path: str) -> tuple[str, ...]:
    """Refuse malformed or too many operation patterns (``INVALID_VALUE`` at ``path``)."""
    out = tuple(patterns)
    if len(out) > EVENTS_FILTERS_MAX:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS,
            f"{len(out)} operation patterns; at most {EVENTS_FILTERS_MAX} are allowed",
            path=path,
        )
    for index, pattern in enumerate(out):
        if len(pattern) > EVENTS_PATTERN_MAX_CHARS or _PATTERN.fullmatch(pattern) is None:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                "an operation pattern is an operation name where * matches anything "
                "(agenttask.*, agenttask.checkpoint, *)",
                path=f"{path}[{index}]",
            )
    return out


_COMPILED: dict[str, re.Pattern[str]] = {}


def matches(patterns: tuple[str, ...], operation: str) -> bool:
    """Whether ``operation`` matches any of ``patterns`` (none: every operation matches)."""
    if not patterns:
        return True
    for pattern in patterns:
        if "*" not in pattern:
            if pattern == operation:
                return True
            continue
        compiled = _COMPILED.get(pattern)
        if compiled is None:
            compiled = re.compile(".*".join(re.escape(p) for p in pattern.split("*")))
            if len(_COMPILED) < 4096:
                _COMPILED[pattern] = compiled
        if compiled.fullmatch(operation):
            return True
    return False


def visible(event: AuditEvent, actor: Actor, creator_of: Callable[[str], str | None]) -> bool:
    """Whether ``actor`` may see ``event`` (the tier's read rule; same workspace assumed).

    An admin sees every event of its workspace (what the audit feed shows it). A member or
    agent sees the events of its own calls and every event about a queue task it created
    (``creator_of(task_id)`` is the token id that created it, ``None`` for another kind of
    task): what it may read of the queue, as it happens.
    """
    if actor.tier >= Tier.ADMIN or event.actor == actor.token_id:
        return True
    return event.subject is not None and creator_of(event.subject) == actor.token_id


class Horizon:
    """The highest event id up to which the event log is final, for one storage.

    A reader that goes past an id below which an event may still commit loses that event
    for good; one that waits at the horizon never does. On SQLite (one writer, ids drawn in
    commit order) the horizon is the newest id. On PostgreSQL ids come from a sequence and
    concurrent writers (the shared writer lock) can commit them out of order, so a gap in the
    visible ids is either a writer still open or one that rolled back. Every writer holds
    its transaction id before it draws its event id (``store/postgres/stores.py``), so when a
    gap is first seen, its writer is among the transactions open in that snapshot (below its
    ``xmax``); once every transaction below that ``xmax`` has ended (the current ``xmin``
    passed it) the gap is final, filled or not. The horizon moves over settled gaps only.
    """

    def __init__(self, storage: Storage, *, batch: int = 1000) -> None:
        self.storage = storage
        self.batch = batch
        self._lock = threading.Lock()
        self._settled: int | None = None
        self._start: tuple[int, int] | None = None  # (newest id, xmax) of a first look
        self._gap: tuple[int, int] | None = None  # (horizon below the gap, xmax first seen)

    def current(self) -> int | None:
        """The horizon as last advanced (``None`` before the first look settled)."""
        return self._settled

    def advance(self) -> int | None:
        """Read what committed since the last look and move the horizon; return it."""
        with self._lock, self.storage.read() as tx:
            return self._advance(tx)

    def _advance(self, tx: Transaction) -> int | None:
        if self._settled is None:
            if self._start is None:
                newest = tx.audit.newest_seq()
                _, xmin, xmax = tx.audit.settled(newest, 1)
                if xmin >= xmax:
                    self._settled = newest
                    return self._advance(tx)
                self._start = (newest, xmax)
                return None
            _, xmin, _ = tx.audit.settled(self._start[0], 1)
            if xmin < self._start[1]:
                return None
            self._settled, self._start = self._start[0], None
        settled = self._settled
        while True:
            seqs, xmin, xmax = tx.audit.settled(settled, self.batch)
            stopped = False
            for seq in seqs:
                if seq != settled + 1:
                    if self._gap is None or self._gap[0] != settled:
                        self._gap = (settled, xmax)
                    if xmin < self._gap[1]:
                        stopped = True
                        break
                self._gap = None
                settled = seq
            if stopped or len(seqs) < self.batch:
                break
        self._settled = settled
        return settled
