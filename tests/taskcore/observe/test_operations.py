"""The registry entries of the operator reads: tiers, surfaces, MCP exposure, one audit each."""

from __future__ import annotations

import attrs
from taskcore import RiskClass, Surface, Tier
from taskcore.codec import wire_name
from taskcore.observe.operations import OBSERVE_OPERATIONS
from taskcore.service import default_registry

from tests.taskcore.queue.support import ADMIN, MEMBER


def _ops():
    registry = default_registry()
    return {name: registry.get(name) for name in OBSERVE_OPERATIONS}


def test_reads_are_read_risk_and_token_writes_are_sensitive():
    for name, op in _ops().items():
        expected = RiskClass.SENSITIVE if name.startswith("admin.token.") else RiskClass.READ
        assert op.risk is expected, name
        assert op.idempotent is (expected is RiskClass.READ)


def test_member_reads_are_mcp_tools_and_admin_reads_are_not():
    ops = _ops()
    mcp = {name for name, op in ops.items() if op.mcp_tool}
    assert mcp == {
        "observe.whoami",
        "observe.repositories",
        "observe.changes",
        "observe.subjects",
        "observe.subject",
    }
    for name, op in ops.items():
        assert (op.surface is Surface.QUEUE) is (name in mcp)
        if name not in mcp:
            assert op.min_tier is Tier.ADMIN, name


def test_every_input_key_is_camel_case():
    for op in _ops().values():
        for field in attrs.fields(op.input_type):
            assert "_" not in wire_name(field), (op.name, field.name)


def test_each_read_is_audited_once_refusals_included(door, service):
    before = service.audit_count()
    door(ADMIN, "observe.backlog")
    door.refused(MEMBER, "observe.backlog")
    door.refused(ADMIN, "observe.backlog", {"limit": 0})
    assert service.audit_count() == before + 3
    assert service.audit_count(operation="observe.backlog") == 3
