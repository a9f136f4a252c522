"""The operation registry: names, tool names, selection, admission (taskcore.registry)."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.actors import Actor, RiskClass, Tier
from taskcore.names import WORKFLOW_PREFIX
from taskcore.registry import (
    Registry,
    Response,
    Surface,
    default_registry,
    portable_tool_name,
)

from tests.taskcore.service_support import demo_op, demo_registry


def test_registry_refuses_duplicates_malformed_names_and_misnamed_workflow_ops():
    reg = Registry()
    reg.register(demo_op("demo.a", lambda c, r: {}))
    with pytest.raises(ValueError, match="twice"):
        reg.register(demo_op("demo.a", lambda c, r: {}))
    with pytest.raises(ValueError, match="malformed"):
        reg.register(demo_op("Demo a", lambda c, r: {}))
    with pytest.raises(ValueError, match="workflow"):
        reg.register(demo_op("claim", lambda c, r: {}, surface=Surface.WORKFLOW))


def test_registry_select_filters_by_surface_door_tool_and_input_kind():
    reg = demo_registry()
    assert [o.name for o in reg.select(surfaces=[Surface.WORKFLOW])] == [
        "workflow.echo",
        "workflow.upload",
    ]
    assert [o.name for o in reg.select(mcp=True)] == ["demo.tool"]
    assert [o.name for o in reg.select(raw_input=True)] == ["demo.raw", "workflow.upload"]
    assert reg.get("workflow.echo").local_name == "echo"
    assert reg.get("workflow.echo").mcp_tool
    assert not reg.get("workflow.upload").mcp_tool
    assert not reg.get("demo.admin").mcp_tool


def test_default_registry_names_are_unique_and_workflow_ops_are_prefixed():
    reg = default_registry()
    for op in reg.select(surfaces=[Surface.WORKFLOW]):
        assert op.name.startswith(WORKFLOW_PREFIX)
    assert len(reg.names()) == len(reg)


def test_portable_tool_names_are_one_rule_and_reversible():
    assert portable_tool_name("agenttask.checkpoint.write") == "agenttask_checkpoint_write"
    reg = Registry()
    reg.register(demo_op("demo.tool", lambda c, r: {}, mcp=True))
    reg.register(demo_op("workflow.echo", lambda c, r: {}, surface=Surface.WORKFLOW))
    assert reg.get("demo.tool").tool_name == "demo_tool"
    assert reg.get("workflow.echo").tool_name == "echo"
    assert reg.for_tool("demo_tool") is reg.get("demo.tool")
    assert reg.for_tool("demo.tool") is reg.get("demo.tool")
    assert reg.for_tool("echo", [Surface.WORKFLOW]) is reg.get("workflow.echo")
    assert reg.for_tool("echo", [Surface.QUEUE]) is None
    assert reg.for_tool("demo_nope") is None
    with pytest.raises(ValueError, match="maps to the tool name 'demo_tool'"):
        reg.register(demo_op("demo_tool", lambda c, r: {}))
    with pytest.raises(ValueError, match="must match"):
        reg.register(demo_op("demo." + "x" * 70, lambda c, r: {}, mcp=True))
    # off MCP a long name is fine: only tools must fit the pattern
    reg.register(demo_op("demo." + "x" * 70, lambda c, r: {}))


def test_operation_admits_by_tier_and_autonomy():
    op = demo_op("demo.sensitive", lambda c, r: {}, min_tier=Tier.MEMBER, risk=RiskClass.SENSITIVE)
    assert op.admits(Actor(token_id="t", workspace="w", tier=Tier.MEMBER, autonomy=2))
    assert not op.admits(Actor(token_id="t", workspace="w", tier=Tier.MEMBER, autonomy=1))
    assert not op.admits(Actor(token_id="t", workspace="w", tier=Tier.AGENT, autonomy=3))


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**70), 2**70)
        | st.floats(allow_nan=False)
        | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=10,
    )
)
def test_a_response_reads_its_body_as_json_loads_does(tree):
    import orjson  # noqa: F401 - loaded, as a service loads it: the fast read is live

    body = json.dumps(tree, ensure_ascii=False).encode()
    assert Response(body).json() == json.loads(body)
    assert Response(b'"\\ud800"').json() == "\ud800"  # orjson refuses it: json.loads reads it
