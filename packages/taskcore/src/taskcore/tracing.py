"""Traces of calls: one span per call on every door, W3C ``traceparent`` in and stored.

The front door (:class:`taskcore.service.Service`) asks its :class:`Tracer` for one span per
call: named after the operation, with the door, the workspace, the task the call named and
the outcome (``OK`` or the error's wire code, also as ``error.type``); never an input, a
result or a credential. A span's parent is, in order: the ``traceparent`` the caller sent
(an HTTP ``traceparent`` header, an MCP request's ``_meta.traceparent``), else the trace of
the task the call names (the ``traceparent`` stored with the task when a call first named it,
:meth:`taskcore.store.audit_api.AuditStore.task_trace`), else the ambient context. So the
create, claim, checkpoints and DONE of one task are spans of one trace, whichever doors
and replicas they came through. The span's own context is what the audit event stores.

The span is started when the call's audit event is written (inside its transaction, when
the task and its trace are known) with the call's start time, and ended after the commit.

OpenTelemetry is optional (``agenttask-core[otel]``). Without a tracer (the default:
``Service(tracer=None)``) nothing of it is imported and a call pays for no span; the audit
event still stores the ``traceparent`` a caller sent. :func:`tracer_from_env` builds the
tracer ``agent-task serve`` uses from the standard ``OTEL_*`` variables;
:func:`otel_tracer` wraps a ``TracerProvider`` a program configured itself.

>>> tracer_from_env({"OTEL_SDK_DISABLED": "true"}) is None
True
>>> format_traceparent(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, 1)
'00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import Any, Protocol

from taskcore.callnote import format_traceparent

__all__ = [
    "Span",
    "Tracer",
    "format_traceparent",
    "otel_available",
    "otel_tracer",
    "tracer_from_env",
]


class Span(Protocol):
    """One call's span, started by :meth:`Tracer.begin`."""

    @property
    def traceparent(self) -> str | None:
        """The span's own W3C context (``None`` when it is not sampled into a valid trace)."""
        ...

    def end(self, outcome: str) -> None:
        """End the span with the call's outcome (``OK`` or an error's wire code)."""
        ...


class Tracer(Protocol):
    """What the front door needs of a tracing library."""

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
    ) -> Span:
        """Start the span of one call (``started_ns``: the call's start, epoch ns).

        ``parent`` is a valid ``traceparent`` (or ``None``: the ambient context); ``link``
        another trace the call belongs to (the task's, when the caller sent its own).
        """
        ...

    def shutdown(self) -> None:
        """Flush and stop what the tracer owns (its provider, when it built one)."""
        ...


def otel_available() -> bool:
    """Whether the ``[otel]`` extra (OpenTelemetry's SDK) is installed (imports nothing)."""
    try:
        return importlib.util.find_spec("opentelemetry.sdk") is not None
    except (ImportError, ValueError):
        return False


def otel_tracer(provider: Any = None) -> Tracer:
    """A :class:`Tracer` over OpenTelemetry (needs the ``[otel]`` extra).

    ``provider`` is a ``TracerProvider`` (``None``: the global one).
    """
    from taskcore.tracing_otel import OtelTracer

    return OtelTracer(provider)


def _disabled(env: Mapping[str, str]) -> bool:
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def tracer_from_env(env: Mapping[str, str] | None = None) -> Tracer | None:
    """The tracer ``agent-task serve`` runs with, configured by the standard variables.

    ``None`` (no tracing, nothing imported) without the ``[otel]`` extra, with
    ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``. Otherwise a provider with
    the exporters ``OTEL_TRACES_EXPORTER`` names (default ``otlp``; ``console``), batched,
    sampled as ``OTEL_TRACES_SAMPLER`` says, its resource from ``OTEL_SERVICE_NAME`` /
    ``OTEL_RESOURCE_ATTRIBUTES`` (``service.name`` defaults to ``agent-task``).
    """
    values = os.environ if env is None else env
    if _disabled(values) or not otel_available():
        return None
    from taskcore.tracing_otel import provider_from_env

    return provider_from_env(values)
