from jsonschema import Draft202012Validator
from taskcore import Registry
from taskmcp.tools import Family, operation_for_tool, tool_operations, tools

from tests.taskhttp.fixtures import build_registry


def _names(family):
    return [t.name for t in tools(build_registry(), family)]


def test_queue_tools_are_the_queue_and_gate_operations_marked_for_mcp():
    assert _names(Family.QUEUE) == ["demo.destroy", "demo.gate", "demo.note", "demo.read"]


def test_workspace_tools_are_workflow_operations_by_envelope_name_without_the_upload():
    assert _names(Family.WORKSPACE) == ["echo", "raise"]
    ops = tool_operations(build_registry(), Family.WORKSPACE)
    assert [op.name for op in ops] == ["workflow.echo", "workflow.raise"]


def test_tool_names_map_back_to_operations():
    assert operation_for_tool(Family.WORKSPACE, "echo") == "workflow.echo"
    assert operation_for_tool(Family.QUEUE, "demo.note") == "demo.note"


def test_tool_schemas_descriptions_and_hints_come_from_the_registry():
    by_name = {t.name: t for t in tools(build_registry(), Family.QUEUE)}
    note = by_name["demo.note"]
    assert note.description == "Test operation demo.note."
    assert note.input_schema["type"] == "object"
    assert note.input_schema["required"] == ["key", "text"]
    assert note.input_schema["properties"]["key"]["description"] == "note key"
    Draft202012Validator.check_schema(note.input_schema)
    assert note.output_schema["required"] == ["key", "text", "workspace"]
    assert note.annotations.read_only_hint is False
    assert note.annotations.destructive_hint is False
    assert note.annotations.idempotent_hint is False
    assert by_name["demo.read"].annotations.read_only_hint is True
    assert by_name["demo.destroy"].annotations.destructive_hint is True
    assert by_name["demo.gate"].output_schema is None


def test_workspace_tool_output_is_the_capability_envelope():
    echo = next(t for t in tools(build_registry(), Family.WORKSPACE) if t.name == "echo")
    schema = echo.output_schema
    Draft202012Validator.check_schema(schema)
    assert Draft202012Validator(schema).is_valid(
        {
            "capability": "agentscm.agent-workflow-tasks/v1",
            "schema_version": 1,
            "operation": "echo",
            "result": {"text": "x"},
        }
    )
    assert not Draft202012Validator(schema).is_valid(
        {
            "capability": "agentscm.agent-workflow-tasks/v1",
            "schema_version": 1,
            "operation": "claim",
            "result": {},
        }
    )


def test_an_empty_registry_offers_no_tools():
    assert tools(Registry(), Family.QUEUE) == []
    assert tools(Registry(), Family.WORKSPACE) == []
