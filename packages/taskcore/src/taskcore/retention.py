"""The retention sweep: old rows go; nothing an idempotent retry or a receipt relies on does.

Audit, idempotency, transition, transfer-byte, phase-checkpoint and done-gate index rows.

Each table has an age in days (:class:`RetentionConfig`, read from ``DATA_DIR/retention.json``
when it exists). The safe defaults and what they never touch:

=====================  =======  ==============================================================
table                  default  never deleted
=====================  =======  ==============================================================
audit events           90       (the audit feed simply starts later)
idempotency rows       30       a row of a workflow task still ``claimed`` (its attempt may
                                retry); otherwise a retry within 30 days gets its retained
                                outcome byte for byte, which is the documented window
transitions            90       rows of a task still ``claimed``
transfer bytes         30       bytes of a transfer whose subject is current, or whose subject
                                has a receipt (the receipt's evidence); the row, its digest,
                                outcome and first answer stay, only the bytes go
phase checkpoints      30       (the seed's platform-scope ``agenttask.checkpoint.prune``)
done-gate index        90       sessions active since; a pruned transcript is re-read if seen
=====================  =======  ==============================================================

A sweep runs in short write transactions of at most ``RETENTION_BATCH_ROWS`` rows, so the
service's writers wait only briefly; it holds a lease row (``retention_run``) so that with
several replicas on one database one sweeps at a time, and appends one audit event
(``retention.run``, actor ``retention``, platform workspace ``""``) when it finishes.

>>> import tempfile
>>> from taskcore import FakeClock, Service
>>> service = Service.open(tempfile.mkdtemp(), clock=FakeClock())
>>> report = run_retention(service, RetentionConfig(), holder="doc")
>>> report.ran, report.deleted["audit"]
(True, 0)
>>> service.close()
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from taskcore.audit import write_event
from taskcore.clock import Clock
from taskcore.codec import decode, dumps, wire_field
from taskcore.digest import AUDIT_INPUT_DOMAIN, domain_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import RETENTION_BATCH_ROWS, RETENTION_MAX_DAYS, RETENTION_MIN_DAYS
from taskcore.observe.reads import RETENTION_SWEEP
from taskcore.service import Service, ServiceConfig
from taskcore.store.audit_api import AuditEvent
from taskcore.store.storage import Transaction, open_storage

__all__ = [
    "RETENTION_CONFIG_FILENAME",
    "RETENTION_OPERATION",
    "RetentionConfig",
    "RetentionReport",
    "RetentionSchedule",
    "default_gate_index",
    "load_retention_config",
    "run_retention",
    "run_retention_in",
]

RETENTION_CONFIG_FILENAME = "retention.json"
"""The optional per-table ages in the data directory."""

RETENTION_OPERATION = "retention.run"
"""The operation name of the sweep's audit event."""

DAY_MS = 86_400_000
_LEASE_MS = 10 * 60 * 1000
_log = logging.getLogger("agent_task.retention")


def _days(default: int) -> Any:
    return wire_field(default=default, lo=RETENTION_MIN_DAYS, hi=RETENTION_MAX_DAYS)


@attrs.frozen(kw_only=True)
class RetentionConfig:
    """Per-table ages in days, and how often ``serve`` sweeps (minutes; 0 turns it off)."""

    audit_days: int = _days(90)
    idempotency_days: int = _days(30)
    transition_days: int = _days(90)
    transfer_bytes_days: int = _days(30)
    checkpoint_days: int = _days(30)
    done_gate_days: int = _days(90)
    interval_minutes: int = wire_field(default=360, lo=0, hi=7 * 24 * 60)


def load_retention_config(data_dir: Path | str) -> RetentionConfig:
    """Read ``DATA_DIR/retention.json`` strictly (unknown keys refused); defaults without it."""
    path = Path(data_dir) / RETENTION_CONFIG_FILENAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return RetentionConfig()
    except OSError:
        raise TaskError(
            ErrorCode.INVALID_PATH, f"cannot read {RETENTION_CONFIG_FILENAME} in the data dir"
        ) from None
    try:
        return decode(RetentionConfig, raw, max_bytes=64 * 1024)
    except TaskError as err:
        raise TaskError(
            err.code, f"{RETENTION_CONFIG_FILENAME}: {err.describe()}", path=err.path
        ) from None


@attrs.frozen(kw_only=True)
class RetentionReport:
    """What one sweep did: rows deleted per table and the cutoffs used (ms)."""

    ran: bool
    holder: str
    started_at_ms: int
    finished_at_ms: int
    deleted: dict[str, int]
    cutoffs: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``agent-task retention run --json``, the stored last report)."""
        return attrs.asdict(self)


def _holder() -> str:
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{secrets.token_hex(4)}"


def run_retention(
    service: Service,
    config: RetentionConfig,
    *,
    holder: str | None = None,
    gate_index: Path | None = None,
) -> RetentionReport:
    """Sweep once (see the module docstring). ``ran`` is false when another holder sweeps.

    ``gate_index`` is the done-gate index file to prune too (skipped when it does not exist).
    """
    holder = holder or _holder()
    now = service.clock.now_ms()
    cutoffs = {
        "audit": now - config.audit_days * DAY_MS,
        "idempotency": now - config.idempotency_days * DAY_MS,
        "transitions": now - config.transition_days * DAY_MS,
        "transfer_bytes": now - config.transfer_bytes_days * DAY_MS,
        "checkpoints": now - config.checkpoint_days * DAY_MS,
        "done_gate": now - config.done_gate_days * DAY_MS,
    }
    deleted = dict.fromkeys(cutoffs, 0)
    with service.write() as tx:
        if not tx.retention.acquire(RETENTION_SWEEP, holder, now_ms=now, lease_ms=_LEASE_MS):
            return RetentionReport(
                ran=False,
                holder=holder,
                started_at_ms=now,
                finished_at_ms=now,
                deleted=deleted,
                cutoffs=cutoffs,
            )
    batches: dict[str, Callable[[Transaction], int]] = {
        "audit": lambda tx: tx.audit.prune(cutoffs["audit"], limit=RETENTION_BATCH_ROWS),
        "idempotency": lambda tx: tx.journal.prune_requests(
            cutoffs["idempotency"], limit=RETENTION_BATCH_ROWS
        ),
        "transitions": lambda tx: tx.journal.prune_transitions(
            cutoffs["transitions"], limit=RETENTION_BATCH_ROWS
        ),
        "transfer_bytes": lambda tx: tx.collector.prune_envelopes(
            cutoffs["transfer_bytes"], now_ms=now, limit=RETENTION_BATCH_ROWS
        ),
        "checkpoints": lambda tx: tx.queue.prune_phases(cutoffs["checkpoints"], workspace=None),
    }
    for table, batch in batches.items():
        while True:
            with service.write() as tx:
                # Renew the lease with every batch; a lost lease (expired and taken) stops us.
                if not tx.retention.acquire(
                    RETENTION_SWEEP, holder, now_ms=service.clock.now_ms(), lease_ms=_LEASE_MS
                ):
                    raise TaskError(ErrorCode.CONFLICT, "another replica took over the sweep")
                n = batch(tx)
            deleted[table] += n
            if n < RETENTION_BATCH_ROWS or table == "checkpoints":
                break
    if gate_index is not None and gate_index.is_file():
        from taskcore.store.sqlite_gate import GateIndexDatabase

        index = GateIndexDatabase(gate_index, create=False)
        try:
            with index.write() as store:
                deleted["done_gate"] = store.prune(cutoffs["done_gate"])
        finally:
            index.close()
    finished = service.clock.now_ms()
    report = RetentionReport(
        ran=True,
        holder=holder,
        started_at_ms=now,
        finished_at_ms=finished,
        deleted=deleted,
        cutoffs=cutoffs,
    )
    with service.write() as tx:
        tx.retention.finish(
            RETENTION_SWEEP,
            holder,
            now_ms=finished,
            report_json=json.dumps(report.to_json(), sort_keys=True),
        )
        write_event(
            tx,
            AuditEvent(
                at_ms=finished,
                actor="retention",
                workspace="",
                operation=RETENTION_OPERATION,
                input_digest=domain_digest(AUDIT_INPUT_DOMAIN, dumps(attrs.asdict(config))),
                outcome="OK",
            ),
        )
    return report


def default_gate_index() -> Path:
    """The done-gate index this host's Stop hooks and ``session_gate`` use."""
    from taskcore.gate.config import GateConfig

    return GateConfig.from_env().index_path


def run_retention_in(
    data_dir: Path | str, *, clock: Clock | None = None, gate_index: Path | None = None
) -> RetentionReport:
    """Sweep the journal in ``data_dir`` once (``agent-task retention run``).

    A missing journal is ``NOT_FOUND`` and nothing is created; the ages come from
    ``DATA_DIR/retention.json`` (defaults without it).
    """
    config = load_retention_config(data_dir)
    storage = open_storage(data_dir, create=False)
    service = Service(storage, config=ServiceConfig(data_dir=Path(data_dir)), clock=clock)
    try:
        return run_retention(service, config, gate_index=gate_index)
    finally:
        service.close()


class RetentionSchedule:
    """Run :func:`run_retention` every ``interval_s`` seconds in a daemon thread (``serve``).

    The first sweep runs after ``first_delay_s``. A failed sweep (the journal busy, storage
    gone) is logged and tried again at the next interval; it never stops the service.
    """

    def __init__(
        self,
        service: Service,
        config: RetentionConfig,
        *,
        interval_s: float | None = None,
        first_delay_s: float = 60.0,
        gate_index: Path | None = None,
    ) -> None:
        self.service = service
        self.config = config
        self.interval_s = config.interval_minutes * 60.0 if interval_s is None else interval_s
        self.first_delay_s = first_delay_s
        self.gate_index = gate_index
        self.holder = _holder()
        self.runs = 0
        self.last: RetentionReport | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="retention", daemon=True)

    @property
    def enabled(self) -> bool:
        """Whether the schedule runs at all (``interval_minutes`` 0 turns it off)."""
        return self.interval_s > 0

    def start(self) -> RetentionSchedule:
        """Start the thread (no-op when disabled)."""
        if self.enabled:
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the current sweep (if any) and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        delay = self.first_delay_s
        while not self._stop.wait(delay):
            delay = self.interval_s
            try:
                self.last = run_retention(
                    self.service, self.config, holder=self.holder, gate_index=self.gate_index
                )
                self.runs += 1
            except TaskError as err:
                _log.warning("retention sweep failed: %s [%s]", err.message, err.code.value)
