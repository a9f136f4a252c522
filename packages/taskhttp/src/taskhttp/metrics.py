"""``GET /metrics``: Prometheus text from ``prometheus_client``, for an admin token.

Counters and histograms are fed by a :class:`taskcore.service.CallObserved` observer (one
event per front-door call, whatever the door); gauges are read at scrape time through the
``observe.stats`` operation with the scraper's token, so they are the token's workspace's and
the scrape is audited like any call. Labels are bounded: operation names come from the
registry (``unknown`` otherwise), doors and codes from closed enums.

========================================  =========  =========================================
metric                                    type       labels
========================================  =========  =========================================
``agent_task_calls_total``                counter    operation, door, code
``agent_task_call_duration_seconds``      histogram  operation, door
``agent_task_lease_runaway_requeues_total``  counter  (runaway guard requeues)
``agent_task_collector_imports_total``    counter    code (``workflow.collector_upload``)
``agent_task_queue_tasks``                gauge      workspace, status (effective)
``agent_task_queue_lease_expired``        gauge      workspace (leases lapsed, claimable again)
``agent_task_approval_gates``             gauge      workspace, status
``agent_task_collector_transfers``        gauge      workspace, outcome
``agent_task_receipts``                   gauge      workspace
``agent_task_retention_last_run_seconds`` gauge      (Unix time of the last finished sweep)
``agent_task_retention_deleted_rows``     gauge      table (the last sweep)
========================================  =========  =========================================
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from typing import Any

import anyio.to_thread
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from taskcore import Door, Service, TaskError
from taskcore.auth import bearer_from_header
from taskcore.service import CallObserved
from taskmcp.family import error_response

__all__ = ["METRICS_PATH", "Metrics"]

METRICS_PATH = "/metrics"
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class _Snapshot(Collector):
    """Gauges from the latest ``observe.stats`` answer (set just before rendering)."""

    def __init__(self) -> None:
        self.stats: dict[str, Any] | None = None

    def collect(self) -> Iterator[Metric]:
        stats = self.stats
        if stats is None:
            return
        ws = str(stats["workspace"])
        tasks = GaugeMetricFamily(
            "agent_task_queue_tasks",
            "Queue tasks by effective status",
            labels=["workspace", "status"],
        )
        expired = GaugeMetricFamily(
            "agent_task_queue_lease_expired",
            "Leases that lapsed (their tasks are claimable again)",
            labels=["workspace"],
        )
        for c in stats["queue"]:
            if c["key"] == "LEASE_EXPIRED":
                expired.add_metric([ws], c["count"])
            else:
                tasks.add_metric([ws, c["key"]], c["count"])
        if not expired.samples:
            expired.add_metric([ws], 0)
        gates = GaugeMetricFamily(
            "agent_task_approval_gates", "Approval gates by status", labels=["workspace", "status"]
        )
        for c in stats["approvals"]:
            gates.add_metric([ws, c["key"]], c["count"])
        transfers = GaugeMetricFamily(
            "agent_task_collector_transfers",
            "Retained collector transfers by outcome",
            labels=["workspace", "outcome"],
        )
        for c in stats["transfers"]:
            transfers.add_metric([ws, c["key"]], c["count"])
        receipts = GaugeMetricFamily(
            "agent_task_receipts", "Receipts recorded", labels=["workspace"]
        )
        receipts.add_metric([ws], stats["receipts"])
        yield from (tasks, expired, gates, transfers, receipts)
        retention = stats["retention"]
        last = GaugeMetricFamily(
            "agent_task_retention_last_run_seconds", "Unix time of the last finished sweep"
        )
        if retention["finishedAtMs"] is not None:
            last.add_metric([], retention["finishedAtMs"] / 1000)
        deleted = GaugeMetricFamily(
            "agent_task_retention_deleted_rows", "Rows the last sweep deleted", labels=["table"]
        )
        for c in retention["deleted"]:
            deleted.add_metric([c["key"]], c["count"])
        yield from (last, deleted)


class Metrics:
    """The service's Prometheus registry and the ``/metrics`` endpoint."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "agent_task_calls",
            "Front-door calls by operation, door and outcome code",
            ["operation", "door", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "agent_task_call_duration_seconds",
            "Time in the front door per call",
            ["operation", "door"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.runaway = Counter(
            "agent_task_lease_runaway_requeues",
            "Tasks the lease runaway guard requeued",
            registry=self.registry,
        )
        self.imports = Counter(
            "agent_task_collector_imports",
            "Collector uploads by outcome code",
            ["code"],
            registry=self.registry,
        )
        self._counts: dict[tuple[str, str, str], Counter] = {}
        self._timings: dict[tuple[str, str], Histogram] = {}
        self._snapshot = _Snapshot()
        self.registry.register(self._snapshot)
        self._render_lock = threading.Lock()
        service.observers.append(self.observe)

    def observe(self, event: CallObserved) -> None:
        """Count one call (the service calls this once per call)."""
        door = "transport" if event.door is None else event.door.value
        key = (event.operation, door, event.code)
        count = self._counts.get(key)
        if count is None:  # the labelled child, found once (labels are bounded, see above)
            count = self._counts.setdefault(key, self.calls.labels(*key))
        count.inc()
        if event.door is not None:
            timed = self._timings.get(key[:2])
            if timed is None:
                timed = self._timings.setdefault(key[:2], self.latency.labels(*key[:2]))
            timed.observe(event.seconds)
        if event.operation == "agenttask.checkpoint" and event.code == "LEASE_RUNAWAY":
            self.runaway.inc()
        if event.operation == "workflow.collector_upload":
            self.imports.labels(event.code).inc()

    def render(self, stats: dict[str, Any] | None) -> bytes:
        """The exposition text with gauges from ``stats``."""
        with self._render_lock:
            self._snapshot.stats = stats
            try:
                return generate_latest(self.registry)
            finally:
                self._snapshot.stats = None

    async def endpoint(self, request: Request) -> Response:
        """``GET /metrics`` with ``Authorization: Bearer <admin token>``."""
        bearer = bearer_from_header(request.headers.get("authorization"))
        call = functools.partial(self.service.call, bearer, "observe.stats", b"{}", door=Door.HTTP)
        try:
            stats = (await anyio.to_thread.run_sync(call)).json()
        except TaskError as err:
            return error_response(err)
        body = await anyio.to_thread.run_sync(self.render, stats)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
