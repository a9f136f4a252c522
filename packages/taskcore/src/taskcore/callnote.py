"""What one call did to a task, noted where it happens and read when its audit event is written.

The audit event of a call says which task the call named and how that task's status moved
(``statusBefore`` -> ``statusAfter``), and carries the call's W3C ``traceparent``. Those facts
are known in different places: the front door knows the trace context it was handed; the
status moves where a row is written. A :class:`CallNote` joins them: the front door opens
one per call (:func:`noting`), the one function of each state machine that writes a task
row notes the move (:func:`note_status`: the queue's ``write_task``/``insert_task``, the
workflow's ``Effects.write``), and the audit writer reads it
(:func:`taskcore.audit.AuditLog.record`). A transition added later reports its status
without knowing any of this, because every task row goes through those functions.

The note is a :class:`contextvars.ContextVar` value, so a call's note is never another
thread's (and a nested call, such as an operation run under an approval grant, opens its
own). Outside a call (tests, tools writing rows directly) there is no note and nothing is
noted. Standard library only.

>>> with noting("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") as note:
...     note_status("at_1", "QUEUED", "LEASED")
...     note_status("at_1", "LEASED", "DONE")
...     note.status_of("at_1")
('QUEUED', 'DONE')
>>> note_status("at_1", "QUEUED", "LEASED")  # no call open: nothing to note
>>> current_note() is None
True
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from typing import Any

__all__ = [
    "NOTED_TASKS_MAX",
    "TRACEPARENT_PATTERN",
    "CallNote",
    "current_note",
    "format_traceparent",
    "note_status",
    "noting",
    "valid_traceparent",
]

NOTED_TASKS_MAX = 16
"""Tasks one call notes at most (a call names one task; a cascade may touch a few more)."""

TRACEPARENT_PATTERN = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
"""A W3C Trace Context ``traceparent`` of version ``00`` (lowercase hex, as the spec writes)."""

_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def valid_traceparent(value: object) -> str | None:
    """``value`` if it is a valid version-00 ``traceparent``, else ``None``.

    The W3C rules: 32 hex trace id and 16 hex parent id, neither all zeros. A header that
    fails them is ignored (the spec: start a new trace), never an error for the caller.

    >>> valid_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")[:5]
    '00-0a'
    >>> valid_traceparent("00-00000000000000000000000000000000-b7ad6b7169203331-01") is None
    True
    >>> valid_traceparent(42) is None
    True
    """
    if not isinstance(value, str) or len(value) != 55:
        return None
    match = TRACEPARENT_PATTERN.fullmatch(value)
    if match is None or match.group(1) == _ZERO_TRACE or match.group(2) == _ZERO_SPAN:
        return None
    return value


def format_traceparent(trace_id: int, span_id: int, flags: int) -> str:
    """The W3C ``traceparent`` (version 00) of a span context's integers."""
    return f"00-{trace_id:032x}-{span_id:016x}-{flags & 0xFF:02x}"


class CallNote:
    """One call's note: its incoming trace context and the status moves of the tasks it wrote.

    ``traceparent`` is the valid incoming context (``None`` when none came); ``door`` the
    door's name and ``started_ns`` the call's start (epoch ns) for its span. ``span`` is
    what the tracer started for the call (:mod:`taskcore.tracing`), ended by the front door
    after the commit; ``None`` without a tracer.
    """

    __slots__ = ("_moves", "door", "span", "started_ns", "traceparent")

    def __init__(
        self, traceparent: str | None = None, *, door: str = "in_process", started_ns: int = 0
    ) -> None:
        self.traceparent = traceparent
        self.door = door
        self.started_ns = started_ns
        self.span: Any = None
        self._moves: dict[str, tuple[str | None, str]] = {}

    def note(self, task_id: str, before: str | None, after: str) -> None:
        """Record that ``task_id`` moved from ``before`` to ``after`` (first before, last after).

        ``before`` is ``None`` for a task the call created.
        """
        moves = self._moves
        seen = moves.get(task_id)
        if seen is not None:
            moves[task_id] = (seen[0], after)
        elif len(moves) < NOTED_TASKS_MAX:
            moves[task_id] = (before, after)

    def status_of(self, task_id: str | None) -> tuple[str | None, str] | None:
        """``(before, after)`` of ``task_id``; of the one task written when it is ``None``."""
        if task_id is not None:
            return self._moves.get(task_id)
        if len(self._moves) == 1:
            return next(iter(self._moves.values()))
        return None

    def task_ids(self) -> tuple[str, ...]:
        """The tasks this call wrote, in the order it first wrote them."""
        return tuple(self._moves)


_CURRENT: ContextVar[CallNote | None] = ContextVar("agent_task_call_note", default=None)


def current_note() -> CallNote | None:
    """The note of the call running in this context, or ``None`` outside a call."""
    return _CURRENT.get()


def noting(
    traceparent: str | None = None, *, door: str = "in_process", started_ns: int = 0
) -> AbstractContextManager[CallNote]:
    """Open a fresh note for one call (the front door's); the previous one comes back after."""
    return _Noting(CallNote(traceparent, door=door, started_ns=started_ns))


class _Noting:
    """:func:`noting`'s context manager (a class: every call opens one, a generator costs more)."""

    __slots__ = ("_note", "_token")

    def __init__(self, note: CallNote) -> None:
        self._note = note
        self._token: Token[CallNote | None] | None = None

    def __enter__(self) -> CallNote:
        self._token = _CURRENT.set(self._note)
        return self._note

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _CURRENT.reset(self._token)


def note_status(task_id: str, before: str | None, after: str) -> None:
    """Note a task's status move on the running call's note (nothing outside a call)."""
    note = _CURRENT.get()
    if note is not None:
        note.note(task_id, before, after)
