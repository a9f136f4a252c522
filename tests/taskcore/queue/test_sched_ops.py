"""The scheduling operations' registrations: admin surface and tier, never MCP, risks, audited."""

from __future__ import annotations

import pytest
from taskcore.actors import RiskClass, Tier
from taskcore.queue.sched_ops import SCHED_VERBS, register
from taskcore.service import Registry, Surface, default_registry

from tests.taskcore.queue.support import ADMIN


def _ops() -> dict[str, object]:
    registry = Registry()
    register(registry)
    return {op.name: op for op in registry}


def test_the_module_registers_exactly_its_verbs():
    assert sorted(_ops()) == sorted(SCHED_VERBS)


@pytest.mark.parametrize("name", SCHED_VERBS)
def test_each_is_an_admin_verb_off_mcp(name):
    op = _ops()[name]
    assert op.surface is Surface.ADMIN
    assert op.min_tier is Tier.ADMIN
    assert op.mcp is False


def test_risks_reads_and_the_destructive_one():
    ops = _ops()
    assert ops["agenttask.paused"].risk is RiskClass.READ
    assert ops["agenttask.cancelMany"].risk is RiskClass.SENSITIVE
    assert {ops[n].risk for n in ("agenttask.pause", "agenttask.resume")} == {RiskClass.WRITE}


def test_the_service_registry_has_them(service):
    names = set(service.registry.names(Surface.ADMIN))
    assert set(SCHED_VERBS) <= names
    assert set(SCHED_VERBS) <= {op.name for op in default_registry()}


def test_each_bulk_call_is_audited_once_beside_its_tasks(door, service):
    door.create()
    door(ADMIN, "agenttask.cancelMany", {"dryRun": True})
    door(ADMIN, "agenttask.cancelMany", {})
    assert service.audit_count(operation="agenttask.cancelMany") == 2
    assert service.audit_count(operation="agenttask.cancel") == 1
