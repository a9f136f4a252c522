import re

import pytest
from jsonschema import Draft202012Validator
from taskcore import Registry
from taskcore.service import default_registry
from taskmcp.tools import Family, operation_for_tool, tool_operations, tools

from tests.taskhttp.fixtures import build_registry
from tests.taskmcp.schema_lint import lint_tool
from tests.taskmcp.support import TOOL_NAME, WORKSPACE_PATH, QueueService, run


def _names(family):
    return [t.name for t in tools(build_registry(), family)]


def test_queue_tools_are_the_queue_and_gate_operations_marked_for_mcp():
    assert _names(Family.QUEUE) == ["demo_destroy", "demo_gate", "demo_note", "demo_read"]


def test_workspace_tools_are_workflow_operations_by_envelope_name_without_the_upload():
    assert _names(Family.WORKSPACE) == ["echo", "raise"]
    ops = tool_operations(build_registry(), Family.WORKSPACE)
    assert [op.name for op in ops] == ["workflow.echo", "workflow.raise"]


def test_tool_names_map_back_to_operations():
    reg = build_registry()
    assert operation_for_tool(reg, Family.WORKSPACE, "echo") == "workflow.echo"
    assert operation_for_tool(reg, Family.QUEUE, "demo_note") == "demo.note"
    # the operation's own dotted spelling is accepted too (never listed)
    assert operation_for_tool(reg, Family.QUEUE, "demo.note") == "demo.note"
    # unknown names and other families' tools pass through for the front door to refuse
    assert operation_for_tool(reg, Family.QUEUE, "echo") == "echo"
    assert operation_for_tool(reg, Family.WORKSPACE, "demo_note") == "workflow.demo_note"


def test_tool_schemas_descriptions_and_hints_come_from_the_registry():
    by_name = {t.name: t for t in tools(build_registry(), Family.QUEUE)}
    note = by_name["demo_note"]
    assert note.description == "demo.note for tests."
    assert note.input_schema["type"] == "object"
    assert note.input_schema["required"] == ["key", "text"]
    assert note.input_schema["properties"]["key"]["description"] == "note key"
    Draft202012Validator.check_schema(note.input_schema)
    assert note.output_schema["required"] == ["key", "text", "workspace"]
    assert note.annotations.read_only_hint is False
    assert note.annotations.destructive_hint is False
    assert note.annotations.idempotent_hint is False
    assert by_name["demo_read"].annotations.read_only_hint is True
    assert by_name["demo_destroy"].annotations.destructive_hint is True
    assert by_name["demo_gate"].output_schema is None


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


def _wire(tool):
    return tool.model_dump(by_alias=True, exclude_none=True, mode="json")


@pytest.mark.parametrize("family", list(Family))
def test_every_tool_schema_passes_the_inspector_portability_check(family):
    # Inspector 2.12.0 reported 38 warnings here (every free JSON value was {}).
    listed = tools(default_registry(), family)
    assert listed
    findings = {t.name: lint_tool(_wire(t)) for t in listed}
    assert {name: f for name, f in findings.items() if f} == {}


def test_the_portability_check_finds_what_it_looks_for():
    bad = {
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {},
                "b": {"type": ["string", "null"]},
                "c": {"$ref": "https://example.com/x.json"},
                "d": True,
                "e": {"not": {}},
            },
            "additionalProperties": False,
        }
    }
    assert lint_tool(bad) == [
        ("untyped-schema", "warning", "inputSchema.properties.a"),
        ("type-union", "warning", "inputSchema.properties.b"),
        ("remote-ref", "warning", "inputSchema.properties.c"),
        ("boolean-schema", "error", "inputSchema.properties.d"),
    ]


_MARKUP = re.compile(r"``|`[^`]+`|:[a-z]+:`")


def _descriptions(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _descriptions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _descriptions(value)


@pytest.mark.parametrize("family", list(Family))
def test_every_description_is_plain_text(family):
    texts = [text for t in tools(default_registry(), family) for text in _descriptions(_wire(t))]
    assert len(texts) > 20
    assert [text for text in texts if _MARKUP.search(text)] == []


@pytest.mark.parametrize("family", list(Family))
def test_tools_are_listed_in_one_order_by_name(family):
    names = [t.name for t in tools(default_registry(), family)]
    assert names == sorted(names)
    assert names == [t.name for t in tools(default_registry(), family)]


def test_an_empty_registry_offers_no_tools():
    assert tools(Registry(), Family.QUEUE) == []
    assert tools(Registry(), Family.WORKSPACE) == []


# -- every endpoint, listed by the official SDK client --------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """This module's service lives for the module: its backend does too (the service's
    fixture depends on this one, so it is made again for each backend)."""
    return module_backend


@pytest.fixture(scope="module")
def queue(tmp_path_factory, _both_backends):
    svc = QueueService(tmp_path_factory.mktemp("names")).start()
    yield svc
    svc.stop()


async def _listed(client):
    return [t.name for t in (await client.list_tools()).tools]


def _check_portable(names):
    assert names, "the endpoint listed no tools"
    assert all(re.fullmatch(TOOL_NAME, n) for n in names), names
    assert len(set(names)) == len(names), names


@pytest.mark.parametrize("role", ["admin", "agent1"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_every_tool_name_on_every_http_endpoint_is_portable_and_unique(queue, role, mode):
    for path in ("/mcp", WORKSPACE_PATH):
        names = run(queue.http(role, path, mode=mode), _listed)
        _check_portable(names)
    queue_names = run(queue.http("admin", "/mcp", mode=mode), _listed)
    assert "agenttask_checkpoint_write" in queue_names
    assert "agenttask.checkpoint.write" not in queue_names


def test_every_tool_name_on_stdio_is_portable_and_unique(queue, tmp_path):
    queue_names = run(queue.stdio("admin", tmp_path), _listed)
    workspace_names = run(
        queue.stdio("admin", tmp_path, extra=("--repository", "acme", "--profile", "default")),
        _listed,
    )
    for names in (queue_names, workspace_names):
        _check_portable(names)
    # session_gate answers the local user on stdio, and no network caller on a default serve
    # (test_offered.py), so only stdio lists it.
    assert "session_gate" in queue_names
    http_names = run(queue.http("admin", "/mcp"), _listed)
    assert [n for n in queue_names if n != "session_gate"] == http_names
    assert workspace_names == run(queue.http("admin", WORKSPACE_PATH), _listed)


def test_every_mcp_tool_of_the_default_registry_maps_to_a_unique_portable_name():
    registry = default_registry()
    for family in Family:
        ops = tool_operations(registry, family)
        names = [op.tool_name for op in ops]
        _check_portable(names)
        for name, op in zip(names, ops, strict=True):
            assert operation_for_tool(registry, family, name) == op.name
