"""session_gate through the front door: registered, read-only, remote paths checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from taskcore.actors import Actor, RiskClass, Tier
from taskcore.errors import ErrorCode, TaskError
from taskcore.gate.config import GateConfig
from taskcore.gate.operations import SESSION_GATE
from taskcore.service import Service, Surface, TxMode


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
