"""The one audit writer: every audit event goes through :func:`append`.

Three callers, one shape:

* the front door (:class:`~taskcore.service.Service`): an accepted call's event in the
  call's own transaction (:meth:`AuditLog.record`), a refused call's event in a transaction
  of its own after the call's rolled back (:meth:`AuditLog.refusal`);
* floods (anonymous, rate-limited and overload refusals): counted in memory and written as
  one event per (actor, workspace, operation, outcome) with a ``calls`` count
  (:meth:`AuditLog.flush`), so the audit count, a sum of ``calls``, still equals the calls;
* platform acts that are not calls (the retention sweep, the forge outbox worker, a
  landing's ref update): :func:`append` inside the transaction of the act.

Operator and admin acts are operations (``operator.*``), so they take the first path and
are audited once each, refusals included.

>>> import tempfile
>>> from taskcore.clock import FakeClock
>>> from taskcore.store import open_storage
>>> storage = open_storage(tempfile.mkdtemp(), create=True)
>>> with storage.write() as tx:
...     append(tx, at_ms=1, actor="t1", workspace="w", operation="demo.op",
...            input_digest=input_digest(b"{}"), outcome="OK")
1
>>> storage.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from taskcore.callnote import CallNote, current_note
from taskcore.clock import Clock
from taskcore.codec import dumps
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import AUDIT_VERB_MAX_CHARS
from taskcore.ratelimit import RefusalTally
from taskcore.store.audit_api import AuditEvent
from taskcore.store.storage import Transaction
from taskcore.tracing import Tracer

__all__ = [
    "AGGREGATED_CODES",
    "AGGREGATED_DIGEST",
    "ANONYMOUS",
    "AuditLog",
    "append",
    "event_of",
    "input_digest",
    "write_event",
]

ANONYMOUS = "anonymous"
"""The audit actor of a call whose credential did not authenticate."""

AGGREGATED_DIGEST = domain_digest(AUDIT_INPUT_DOMAIN, b"")
"""The input digest of an aggregated event (it stands for many inputs)."""

AGGREGATED_CODES = frozenset({ErrorCode.RATE_LIMITED, ErrorCode.OVERLOADED})
"""Load-shedding refusals: counted, not written one row each (they come in floods)."""


def _raw_bytes(raw: bytes | str | Mapping[str, Any] | None) -> bytes:
    if raw is None:
        return b"{}"
    if isinstance(raw, bytes | bytearray | memoryview):
        return bytes(raw)
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass")
    try:
        return dumps(dict(raw))
    except (TypeError, ValueError):
        return repr(raw).encode("utf-8", "replace")


def input_digest(raw: bytes | str | Mapping[str, Any] | None) -> str:
    """The audit digest of a call's input as it arrived (a JSON tree is encoded compactly)."""
    return domain_digest(AUDIT_INPUT_DOMAIN, _raw_bytes(raw))


def write_event(tx: Transaction, event: AuditEvent) -> int:
    """Write a built event in ``tx``; return its sequence number (every write ends here)."""
    return tx.audit.append(event)


def event_of(
    *,
    at_ms: int,
    actor: str,
    workspace: str,
    operation: str,
    input_digest: str,
    outcome: str,
    subject: str | None = None,
    calls: int = 1,
    status_before: str | None = None,
    status_after: str | None = None,
    traceparent: str | None = None,
) -> AuditEvent:
    """One audit event: ``operation`` cut to the audit bound; ``outcome`` ``"OK"`` or a code."""
    return AuditEvent(
        at_ms=at_ms,
        actor=actor,
        workspace=workspace,
        operation=operation[:AUDIT_VERB_MAX_CHARS],
        input_digest=input_digest,
        outcome=outcome,
        subject=subject,
        calls=calls,
        status_before=status_before,
        status_after=status_after,
        traceparent=traceparent,
    )


def append(
    tx: Transaction,
    *,
    at_ms: int,
    actor: str,
    workspace: str,
    operation: str,
    input_digest: str,
    outcome: str,
    subject: str | None = None,
    calls: int = 1,
    status_before: str | None = None,
    status_after: str | None = None,
    traceparent: str | None = None,
) -> int:
    """Write one audit event in ``tx``; return its sequence number (see :func:`event_of`)."""
    return write_event(
        tx,
        event_of(
            at_ms=at_ms,
            actor=actor,
            workspace=workspace,
            operation=operation,
            input_digest=input_digest,
            outcome=outcome,
            subject=subject,
            calls=calls,
            status_before=status_before,
            status_after=status_after,
            traceparent=traceparent,
        ),
    )


class AuditLog:
    """The front door's audit: events in the call's transaction, refusals, counted floods.

    ``write`` opens a write transaction (the service's, queued behind its other writers).
    Each event takes from the running call's note (:mod:`taskcore.callnote`) how the call
    moved its task and the call's trace context; with a ``tracer`` the call's span starts
    here, when the task and its trace are known (:mod:`taskcore.tracing`).
    """

    def __init__(
        self,
        write: Callable[[], AbstractContextManager[Transaction]],
        clock: Clock,
        tracer: Tracer | None = None,
    ) -> None:
        self._write = write
        self.clock = clock
        self.tracer = tracer
        self._tally = RefusalTally()
        self._flusher: threading.Thread | None = None
        self._flusher_lock = threading.Lock()
        self._closing = threading.Event()

    def record(
        self,
        tx: Transaction,
        actor: str,
        workspace: str,
        name: str,
        digest: str,
        outcome: str,
        subject: str | None = None,
    ) -> None:
        """Audit one call inside ``tx``, the transaction that applied it."""
        self._event(tx, actor, workspace, name, digest, outcome, subject, refused=False)

    def _event(
        self,
        tx: Transaction,
        actor: str,
        workspace: str,
        name: str,
        digest: str,
        outcome: str,
        subject: str | None,
        *,
        refused: bool,
    ) -> None:
        """Write a call's event.

        ``refused``: its own transaction rolled back (this is the refusal's event in a
        transaction of its own), so no status move it noted happened.
        """
        now = self.clock.now_ms()
        note = current_note()
        before = after = traceparent = None
        if note is not None:
            if not refused:
                if subject is None and len(note.task_ids()) == 1:
                    subject = note.task_ids()[0]
                moved = note.status_of(subject)
                if moved is not None:
                    before, after = moved
            traceparent = self._trace(tx, note, name, workspace, subject, now)
        # The call's event is its transaction's last write and its seq is not read: the store
        # may send it with the COMMIT (AuditStore.append_last).
        tx.audit.append_last(
            event_of(
                at_ms=now,
                actor=actor,
                workspace=workspace,
                operation=name,
                input_digest=digest,
                outcome=outcome,
                subject=subject,
                status_before=before,
                status_after=after,
                traceparent=traceparent,
            )
        )

    def _trace(
        self,
        tx: Transaction,
        note: CallNote,
        name: str,
        workspace: str,
        subject: str | None,
        now_ms: int,
    ) -> str | None:
        """The call's trace context for its event; the task's trace recorded on first sight."""
        keyed = subject is not None and workspace != ""
        tracer = self.tracer
        if tracer is None:
            traceparent = note.traceparent
            if traceparent is not None and keyed:
                assert subject is not None
                tx.audit.put_task_trace(workspace, subject, traceparent, now_ms)
            return traceparent
        task_trace = tx.audit.task_trace(workspace, subject) if keyed and subject else None
        if note.span is None:
            incoming = note.traceparent
            note.span = tracer.begin(
                name,
                door=note.door,
                workspace=workspace,
                task_id=subject,
                started_ns=note.started_ns,
                parent=incoming or task_trace,
                link=task_trace if incoming is not None and task_trace != incoming else None,
            )
        traceparent = note.span.traceparent or note.traceparent
        if traceparent is not None and keyed and task_trace is None:
            assert subject is not None
            tx.audit.put_task_trace(workspace, subject, traceparent, now_ms)
        return traceparent

    def refusal(
        self,
        actor: str,
        workspace: str,
        name: str,
        digest: str,
        error: TaskError,
        subject: str | None = None,
    ) -> None:
        """Audit one refused call in a transaction of its own; never raises.

        Anonymous, rate-limited and overload refusals are counted in memory and written in
        batches: one durable write each is what an unauthenticated flood would otherwise
        buy. A refusal storage cannot take (busy, full, gone) is counted the same way and
        written once storage answers again.
        """
        if actor == ANONYMOUS or error.code in AGGREGATED_CODES:
            self._count(actor, workspace, name, error)
            return
        try:
            with self._write() as tx:
                self._event(
                    tx, actor, workspace, name, digest, error.code.value, subject, refused=True
                )
        except Exception:  # the refusal being reported must reach the caller
            self._count(actor, workspace, name, error)

    def _count(self, actor: str, workspace: str, name: str, error: TaskError) -> None:
        self._tally.add(actor, workspace, name[:AUDIT_VERB_MAX_CHARS], error.code.value)
        if self._flusher is None and not self._closing.is_set():
            with self._flusher_lock:
                if self._flusher is None:
                    self._flusher = threading.Thread(
                        target=self._flush_loop, name="audit-refusals", daemon=True
                    )
                    self._flusher.start()

    def _flush_loop(self) -> None:
        # One long-lived thread (one journal connection) writes the tally when it is due.
        interval = self._tally.flush_ms / 1000.0
        while not self._closing.wait(interval):
            if self._tally.due():
                self.flush()

    def flush(self) -> int:
        """Write the counted refusals; return how many calls were written (never raises).

        One event per key, with its count in ``calls``. If storage refuses, the counts are
        kept for the next flush.
        """
        counts = self._tally.drain()
        if not counts:
            return 0
        try:
            with self._write() as tx:
                now = self.clock.now_ms()
                for (actor, workspace, operation, outcome), calls in counts.items():
                    append(
                        tx,
                        at_ms=now,
                        actor=actor,
                        workspace=workspace,
                        operation=operation,
                        input_digest=AGGREGATED_DIGEST,
                        outcome=outcome,
                        calls=calls,
                    )
        except Exception:  # kept in memory (bounded) and retried
            self._tally.restore(counts)
            return 0
        return sum(counts.values())

    def close(self) -> None:
        """Stop the flusher and write what is still counted."""
        self._closing.set()
        flusher = self._flusher
        if flusher is not None:
            flusher.join(5)
        self.flush()
