"""OpenTelemetry traces of calls (the in-memory exporter): one span per call, and one trace
per task across its calls, whoever makes them and whatever context they send."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from taskcore import FakeClock, Service, TaskError
from taskcore.tracing import otel_tracer, tracer_from_env

from tests.taskcore.queue.support import MEMBER, START_MS, WORKER

CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def service(tmp_path, exporter):
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    svc = Service.open(tmp_path / "data", clock=FakeClock(START_MS), tracer=otel_tracer(provider))
    yield svc
    svc.close()


def _traceparents(service) -> dict[str, str | None]:
    with service.storage.read() as tx:
        events = tx.audit.after(0, up_to=10**9, limit=100, workspace="w")
    return {f"{e.seq}:{e.operation}": e.traceparent for e in events}


def _life(service, *, traceparent: str | None = None) -> str:
    task_id = service.dispatch(
        MEMBER, "agenttask.create", {"verb": "agent.run"}, traceparent=traceparent
    ).json()["taskId"]
    fence = service.dispatch(WORKER, "agenttask.claim", {"taskId": task_id}).json()["lease"][
        "fence"
    ]
    service.dispatch(WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": fence})
    service.dispatch(
        WORKER, "agenttask.checkpoint", {"taskId": task_id, "fence": fence, "status": "DONE"}
    )
    return task_id


def test_one_trace_per_task_across_its_calls(service, exporter):
    first = _life(service)
    second = _life(service)
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [
        "agenttask.create",
        "agenttask.claim",
        "agenttask.checkpoint",
        "agenttask.checkpoint",
    ] * 2
    for task_id, group in ((first, spans[:4]), (second, spans[4:])):
        create = group[0]
        assert create.parent is None  # a new trace: nobody sent one
        assert {s.context.trace_id for s in group} == {create.context.trace_id}
        for later in group[1:]:
            assert later.parent.span_id == create.context.span_id
        assert {s.attributes["agent_task.task_id"] for s in group} == {task_id}
    assert spans[0].context.trace_id != spans[4].context.trace_id
    # Each call's event stores its own span's context; the task keeps the create's.
    stored = list(_traceparents(service).values())
    expected = [
        f"00-{s.context.trace_id:032x}-{s.context.span_id:016x}-{int(s.context.trace_flags):02x}"
        for s in spans
    ]
    assert stored == expected
    with service.storage.read() as tx:
        assert tx.audit.task_trace("w", first) == expected[0]


def test_a_callers_context_is_the_parent_and_the_task_joins_its_trace(service, exporter):
    _life(service, traceparent=CALLER)
    spans = exporter.get_finished_spans()
    assert {f"{s.context.trace_id:032x}" for s in spans} == {CALLER[3:35]}
    assert spans[0].parent.span_id == int(CALLER[36:52], 16)


def test_a_call_with_its_own_context_links_the_tasks_trace(service, exporter):
    task_id = _life(service)
    service.dispatch(MEMBER, "agenttask.get", {"taskId": task_id}, traceparent=CALLER)
    get = exporter.get_finished_spans()[-1]
    create = exporter.get_finished_spans()[0]
    assert f"{get.context.trace_id:032x}" == CALLER[3:35]
    assert [link.context.trace_id for link in get.links] == [create.context.trace_id]


def test_spans_carry_operation_workspace_outcome_and_code_never_input(service, exporter):
    task_id = service.dispatch(
        MEMBER, "agenttask.create", {"verb": "agent.run", "payload": {"secret": "s3cr3t"}}
    ).json()["taskId"]
    with pytest.raises(TaskError):
        service.dispatch(WORKER, "agenttask.checkpoint", {"taskId": task_id, "status": "DONE"})
    create, refused = exporter.get_finished_spans()
    assert create.kind is SpanKind.INTERNAL
    assert dict(create.attributes) == {
        "agent_task.operation": "agenttask.create",
        "agent_task.door": "in_process",
        "agent_task.workspace": "w",
        "agent_task.task_id": task_id,
        "agent_task.outcome": "OK",
    }
    assert refused.attributes["agent_task.outcome"] == "LEASE_NOT_HELD"
    assert refused.attributes["error.type"] == "LEASE_NOT_HELD"
    assert refused.status.status_code.name == "UNSET"  # the caller's mistake, not ours
    assert "s3cr3t" not in repr([dict(s.attributes) for s in exporter.get_finished_spans()])


def test_the_environment_configures_the_served_tracer(monkeypatch):
    assert tracer_from_env({"OTEL_SDK_DISABLED": "true"}) is None
    assert tracer_from_env({"OTEL_TRACES_EXPORTER": "none"}) is None
    tracer = tracer_from_env({"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "x"})
    assert tracer is not None
    tracer.shutdown()


def test_a_missing_exporter_is_a_warning_only_when_named(caplog):
    """The SDK's default exporter (otlp) missing means no tracing, quietly; a named one warns."""
    import importlib.metadata

    if importlib.metadata.entry_points(group="opentelemetry_traces_exporter", name="otlp"):
        pytest.skip("the OTLP exporter is installed here: nothing is missing")
    with caplog.at_level(logging.DEBUG, logger="taskcore.tracing"):
        assert tracer_from_env({}) is None
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="taskcore.tracing"):
        assert tracer_from_env({"OTEL_TRACES_EXPORTER": "otlp"}) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "opentelemetry-exporter-otlp-proto-http" in caplog.records[0].getMessage()


def test_without_a_tracer_nothing_of_opentelemetry_is_imported():
    import subprocess
    import sys

    code = (
        "import sys, tempfile\n"
        "from taskcore import Service, Tier, Actor\n"
        "s = Service.open(tempfile.mkdtemp())\n"
        "a = Actor(token_id='m', workspace='w', tier=Tier.MEMBER, autonomy=2)\n"
        "s.dispatch(a, 'agenttask.create', {'verb': 'agent.run'}, traceparent="
        "'00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')\n"
        "s.close()\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
