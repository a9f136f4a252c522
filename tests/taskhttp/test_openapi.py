import json

from jsonschema import Draft202012Validator
from taskcore import ErrorCode, ErrorKind, Registry
from taskhttp.openapi import (
    COLLECTOR_UPLOAD_PATH,
    HEALTH_PATH,
    MCP_PATH,
    OPENAPI_PATH,
    WORKFLOW_PATH,
    WORKSPACE_MCP_PATH,
    openapi_document,
)

from tests.taskhttp.fixtures import build_registry


def _doc():
    return openapi_document(build_registry())


def test_document_is_openapi_3_1_with_bearer_security():
    doc = _doc()
    assert doc["openapi"] == "3.1.0"
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"][HEALTH_PATH]["get"]["security"] == []


def test_every_route_is_described():
    paths = _doc()["paths"]
    for path in (
        HEALTH_PATH,
        OPENAPI_PATH,
        MCP_PATH,
        WORKSPACE_MCP_PATH,
        WORKFLOW_PATH,
        COLLECTOR_UPLOAD_PATH,
    ):
        assert path in paths
    verbs = sorted(p for p in paths if p.startswith("/v/"))
    assert verbs == [
        "/v/demo.admin",
        "/v/demo.big",
        "/v/demo.destroy",
        "/v/demo.hidden",
        "/v/demo.note",
        "/v/demo.raise",
        "/v/demo.read",
        "/v/demo.slow",
    ]


def test_verb_bodies_are_the_wire_schemas_and_errors_reference_the_error_body():
    doc = _doc()
    post = doc["paths"]["/v/demo.note"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/NoteIn"}
    note_in = doc["components"]["schemas"]["NoteIn"]
    assert note_in["required"] == ["key", "text"]
    assert note_in["additionalProperties"] is False
    assert post["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/NoteOut"
    }
    # 414 and 431 are the transport's, before any route (documented once, as "4XX").
    statuses = {k.http_status for k in ErrorKind} - {405, 414, 431, 500}
    assert {int(s) for s in post["responses"] if s != "200"} == statuses
    assert post["x-agent-task"]["risk"] == "write"


def test_workflow_route_lists_one_envelope_per_operation():
    post = _doc()["paths"][WORKFLOW_PATH]["post"]
    options = post["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    assert [o["properties"]["operation"]["const"] for o in options] == ["echo", "raise"]
    result = post["responses"]["200"]["content"]["application/json"]["schema"]["oneOf"][0]
    assert result["properties"]["capability"] == {"const": "agentscm.agent-workflow-tasks/v1"}


def test_workflow_route_without_operations_still_describes_the_envelope():
    doc = openapi_document(Registry())
    body = doc["paths"][WORKFLOW_PATH]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["required"] == ["operation", "request"]
    upload = doc["paths"][COLLECTOR_UPLOAD_PATH]["post"]["requestBody"]["content"]
    assert "application/octet-stream" in upload


def test_all_schemas_are_valid_and_refs_resolve():
    doc = _doc()
    text = json.dumps(doc)
    for name, schema in doc["components"]["schemas"].items():
        Draft202012Validator.check_schema(schema)
        assert f'"#/components/schemas/{name}"' in text or name == "ErrorBody"
    for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
        assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"]


def test_error_body_schema_accepts_every_code():
    schema = _doc()["components"]["schemas"]["ErrorBody"]
    validator = Draft202012Validator(schema)
    for code in ErrorCode:
        assert validator.is_valid({"error": "x", "code": code.value})


def test_the_document_names_a_server_and_every_operation_a_4xx_response():
    # Redocly's recommended rules no-empty-servers and operation-4xx-response
    # (scripts/redocly-lint.sh runs Redocly itself).
    doc = openapi_document(build_registry(), server_url="http://127.0.0.1:9999/")
    assert doc["servers"] == [
        {"url": "http://127.0.0.1:9999", "description": "this agent-task service"}
    ]
    assert openapi_document(build_registry())["servers"][0]["url"] == "http://127.0.0.1:8787"
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            codes = operation["responses"]
            assert any(c.startswith("4") for c in codes), (path, method)


def test_the_repository_pattern_accepts_owner_name_and_refuses_dot_segments():
    import re

    params = _doc()["paths"][WORKFLOW_PATH]["parameters"]
    pattern = next(p for p in params if p["name"] == "repository")["schema"]["pattern"]
    for ok in ("calc", "acme/calc", "a.b/c-d_e"):
        assert re.search(pattern, ok), ok
    for bad in ("", ".", "..", "../x", "a/..", "a/b/c", "a//b"):
        assert not re.search(pattern, bad), bad
