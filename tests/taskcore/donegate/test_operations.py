"""session_gate through the front door: registered, read-only, remote paths checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from taskcore.actors import Actor, RiskClass, Tier
from taskcore.donegate.config import GateConfig
from taskcore.donegate.operations import SESSION_GATE
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import Door, Service, Surface, TxMode


@pytest.fixture
def service(tmp_path: Path, roots: GateConfig, monkeypatch: pytest.MonkeyPatch) -> Service:
    monkeypatch.setenv("AGENT_TASK_GATE_INDEX", str(roots.index_path))
    monkeypatch.setenv("AGENT_TASK_CLAUDE_PROJECTS_DIR", str(roots.claude_root))
    monkeypatch.setenv("AGENT_TASK_CODEX_SESSIONS_DIR", str(roots.codex_root))
    svc = Service.open(tmp_path / "journal")
    yield svc
    svc.close()


ACTOR = Actor(token_id="t1", workspace="w1", tier=Tier.AGENT, autonomy=0)


def test_registered_as_a_read_only_gate_tool(service: Service) -> None:
    op = service.registry.get(SESSION_GATE)
    assert op is not None
    assert (op.surface, op.risk, op.min_tier, op.mcp, op.tx) == (
        Surface.GATE,
        RiskClass.READ,
        Tier.AGENT,
        True,
        TxMode.OWN,
    )
    assert op.mcp_tool


def test_dispatch_answers_and_audits_once(service: Service, roots: GateConfig) -> None:
    path = next(roots.codex_root.rglob("*0004*.jsonl"))
    body = service.dispatch(ACTOR, SESSION_GATE, {"transcript_path": str(path)}).json()
    assert body["rung"] == 5
    assert body["indexed"] is True
    assert list(body) == [
        "rung",
        "rung_name",
        "below_line",
        "missing",
        "receipt_lines",
        "budget_left",
        "stale",
        "indexed",
    ]
    assert service.audit_count(operation=SESSION_GATE) == 1


def test_a_remote_path_outside_the_roots_is_refused(service: Service, tmp_path: Path) -> None:
    outside = tmp_path / "x.jsonl"
    outside.write_text("{}\n")
    for raw in (
        {"transcript_path": str(outside)},
        {"transcript_path": "/etc/passwd"},
        {"transcript_path": os.path.join(str(tmp_path), "claude", "..", "x.jsonl")},
    ):
        with pytest.raises(TaskError) as err:
            service.dispatch(ACTOR, SESSION_GATE, raw)
        assert err.value.code is ErrorCode.INVALID_PATH


def test_strict_input(service: Service) -> None:
    with pytest.raises(TaskError) as err:
        service.dispatch(ACTOR, SESSION_GATE, {"transcript": "x"})
    assert err.value.code is ErrorCode.UNKNOWN_FIELD
    with pytest.raises(TaskError) as err:
        service.dispatch(ACTOR, SESSION_GATE, {"session_id": "a b; rm -rf"})
    assert err.value.code is ErrorCode.INVALID_VALUE


def _service_with(tmp_path: Path, allowed: frozenset[str] | None) -> Service:
    return Service.open(tmp_path / "scoped", session_gate_workspaces=allowed)


@pytest.mark.parametrize("door", [Door.HTTP, Door.MCP])
def test_network_doors_are_refused_unless_the_workspace_is_named(
    tmp_path: Path, roots: GateConfig, monkeypatch: pytest.MonkeyPatch, door: Door
) -> None:
    monkeypatch.setenv("AGENT_TASK_GATE_INDEX", str(roots.index_path))
    monkeypatch.setenv("AGENT_TASK_CODEX_SESSIONS_DIR", str(roots.codex_root))
    monkeypatch.setenv("AGENT_TASK_CLAUDE_PROJECTS_DIR", str(roots.claude_root))
    raw = {"transcript_path": str(next(roots.codex_root.rglob("*0004*.jsonl")))}
    other = Actor(token_id="t2", workspace="w2", tier=Tier.AGENT, autonomy=0)
    default = Service.open(tmp_path / "default")  # the default: no workspace
    try:
        with pytest.raises(TaskError) as err:
            default.dispatch(ACTOR, SESSION_GATE, raw, door=door)
        assert err.value.code is ErrorCode.FORBIDDEN
        assert default.dispatch(ACTOR, SESSION_GATE, raw).json()["rung"] == 5  # in process
        assert default.dispatch(ACTOR, SESSION_GATE, raw, door=Door.CLI).json()["rung"] == 5
    finally:
        default.close()
    named = _service_with(tmp_path, frozenset({"w1"}))
    try:
        assert named.dispatch(ACTOR, SESSION_GATE, raw, door=door).json()["rung"] == 5
        with pytest.raises(TaskError) as err:
            named.dispatch(other, SESSION_GATE, raw, door=door)
        assert err.value.code is ErrorCode.FORBIDDEN
    finally:
        named.close()
    local = _service_with(tmp_path / "local", None)  # agent-task mcp --stdio
    try:
        assert local.dispatch(other, SESSION_GATE, raw, door=door).json()["rung"] == 5
    finally:
        local.close()
