"""The OpenTelemetry side of :mod:`taskcore.tracing` (imported only with the ``[otel]`` extra).

Spans follow OpenTelemetry's conventions where they apply: ``SERVER`` spans for calls that
came over the network (HTTP, MCP, the board), ``INTERNAL`` ones for in-process and CLI
calls; ``error.type`` carries the error's wire code; the span status is ``ERROR`` only for
failures of the service itself (``INTERNAL``, storage unavailable, overload), as a server
span's status is not an error for what the caller got wrong. The attributes of this
system are under ``agent_task.``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from taskcore.callnote import format_traceparent
from taskcore.errors import ErrorCode, ErrorKind

__all__ = ["OtelSpan", "OtelTracer", "provider_from_env"]

_LOG = logging.getLogger("taskcore.tracing")
_PROPAGATOR = TraceContextTextMapPropagator()
_NETWORK_DOORS = frozenset({"http", "mcp", "board"})
_SERVICE_FAILURES = frozenset({ErrorKind.INTERNAL, ErrorKind.UNAVAILABLE})
_EXPORTERS = "opentelemetry_traces_exporter"


def _context(traceparent: str | None) -> Context | None:
    if traceparent is None:
        return None
    return _PROPAGATOR.extract({"traceparent": traceparent})


def _link(traceparent: str) -> Link | None:
    span = trace.get_current_span(_context(traceparent))
    context = span.get_span_context()
    return Link(context) if context.is_valid else None


class OtelSpan:
    """One call's OpenTelemetry span."""

    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    @property
    def traceparent(self) -> str | None:
        """The span's context as a ``traceparent`` (``None`` when it is not valid)."""
        context = self._span.get_span_context()
        if not context.is_valid:
            return None
        return format_traceparent(context.trace_id, context.span_id, int(context.trace_flags))

    def end(self, outcome: str) -> None:
        """Record the outcome and end the span."""
        span = self._span
        span.set_attribute("agent_task.outcome", outcome)
        if outcome != "OK":
            span.set_attribute("error.type", outcome)
            try:
                kind = ErrorCode.from_wire(outcome).kind
            except ValueError:
                kind = ErrorKind.INTERNAL
            if kind in _SERVICE_FAILURES:
                span.set_status(Status(StatusCode.ERROR, outcome))
        span.end()


class OtelTracer:
    """:class:`taskcore.tracing.Tracer` over an OpenTelemetry ``TracerProvider``."""

    def __init__(self, provider: Any = None, *, owned: bool = False) -> None:
        self._provider = provider
        self._owned = owned
        self._tracer = trace.get_tracer("taskcore", tracer_provider=provider)

    def begin(
        self,
        operation: str,
        *,
        door: str,
        workspace: str,
        task_id: str | None,
        started_ns: int,
        parent: str | None,
        link: str | None,
    ) -> OtelSpan:
        """Start one call's span (see :meth:`taskcore.tracing.Tracer.begin`)."""
        attributes: dict[str, str] = {
            "agent_task.operation": operation,
            "agent_task.door": door,
            "agent_task.workspace": workspace,
        }
        if task_id is not None:
            attributes["agent_task.task_id"] = task_id
        links = None
        if link is not None:
            made = _link(link)
            links = None if made is None else [made]
        span = self._tracer.start_span(
            operation,
            context=_context(parent),
            kind=SpanKind.SERVER if door in _NETWORK_DOORS else SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            start_time=started_ns,
        )
        return OtelSpan(span)

    def shutdown(self) -> None:
        """Flush and shut down the provider this tracer built (not one it was handed)."""
        if self._owned and self._provider is not None:
            self._provider.shutdown()


def _resource(env: Mapping[str, str]) -> Resource:
    named = env.get("OTEL_SERVICE_NAME") or "service.name=" in env.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    return Resource.create({} if named else {"service.name": "agent-task"})


def _exporter(name: str, *, named: bool) -> SpanExporter | None:
    """The exporter called ``name``; ``None`` (said in the log) when it is not installed.

    ``named``: the operator named it in ``OTEL_TRACES_EXPORTER`` (a warning when missing);
    otherwise it is the SDK's default, ``otlp``, and a server without the OTLP exporter
    installed simply does not trace (said at debug level, not at every start).
    """
    for point in entry_points(group=_EXPORTERS, name=name):
        exporter: SpanExporter = point.load()()
        return exporter
    hint = " (pip install opentelemetry-exporter-otlp-proto-http)" if name == "otlp" else ""
    if named:
        _LOG.warning("OTEL_TRACES_EXPORTER names %r, which is not installed%s", name, hint)
    else:
        _LOG.debug("no tracing: the default exporter %r is not installed%s", name, hint)
    return None


def provider_from_env(env: Mapping[str, str]) -> OtelTracer | None:
    """A tracer over a new provider configured by the ``OTEL_*`` variables.

    See :func:`taskcore.tracing.tracer_from_env`; ``None`` when no exporter is wanted.
    """
    names = [n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]
    if not names or "none" in names:
        return None
    provider = TracerProvider(resource=_resource(env))
    named = "OTEL_TRACES_EXPORTER" in env
    exporters = [e for e in (_exporter(n, named=named) for n in names) if e is not None]
    if not exporters:
        return None
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return OtelTracer(provider, owned=True)
