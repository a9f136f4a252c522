import hashlib
import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from taskcore import ErrorCode, ErrorKind, Service
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES, REQUEST_BODY_MAX_BYTES
from taskhttp import BackgroundServer, create_app

from tests.taskhttp.fixtures import Live

WF = "/v1/hub/workspace/repositories/{repo}/profiles/{profile}/agent-tasks"


def post(live, path, body=None, *, role="agent", content=None, **headers):
    hdrs = live.headers(role, **headers)
    if content is None:
        content = json.dumps(body if body is not None else {}).encode()
    return httpx.post(live.url + path, content=content, headers=hdrs, timeout=30)


def error(response, status, code):
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code.value
    assert isinstance(body["error"], str)
    assert body["error"]
    return body


def test_a_queue_verb_runs_for_the_tokens_workspace(live):
    r = post(live, "/v/demo.note", {"key": "a", "text": "hello"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"key": "a", "text": "hello", "workspace": "w1"}
    assert post(live, "/v/demo.read", {"key": "a"}).json()["text"] == "hello"


def test_another_workspaces_token_does_not_see_the_note(live):
    post(live, "/v/demo.note", {"key": "mine", "text": "w1 only"})
    error(post(live, "/v/demo.read", {"key": "mine"}, role="other"), 404, ErrorCode.NOT_FOUND)


def test_the_body_cannot_choose_the_workspace_or_actor(live):
    body = {"key": "a", "text": "x", "workspace": "w2"}
    err = error(post(live, "/v/demo.note", body), 400, ErrorCode.UNKNOWN_FIELD)
    assert err["path"] == "$.workspace"


def test_wrong_tier_is_forbidden(live):
    error(post(live, "/v/demo.admin", {"key": "a"}), 403, ErrorCode.FORBIDDEN)
    error(post(live, "/v/demo.admin", {"key": "zz"}, role="admin"), 404, ErrorCode.NOT_FOUND)


def test_autonomy_below_the_risk_class_is_forbidden(live):
    error(
        post(live, "/v/demo.note", {"key": "a", "text": "x"}, role="reader"),
        403,
        ErrorCode.AUTONOMY_EXCEEDED,
    )
    error(
        post(live, "/v/demo.destroy", {"key": "a"}, role="member"), 403, ErrorCode.AUTONOMY_EXCEEDED
    )


def test_revoked_token_is_refused(live):
    error(post(live, "/v/demo.read", {"key": "a"}, role="revoked"), 401, ErrorCode.TOKEN_REVOKED)


def test_a_token_revoked_while_in_use_is_refused_on_its_next_request(live):
    token, token_id = live.issue("agent")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps({"key": "r", "text": "x"})
    assert httpx.post(live.url + "/v/demo.note", content=body, headers=headers).status_code == 200
    live.revoke(token_id)
    r = httpx.post(live.url + "/v/demo.note", content=body, headers=headers)
    error(r, 401, ErrorCode.TOKEN_REVOKED)


def test_a_bearer_admitted_moments_ago_is_admitted_from_memory(live, monkeypatch):
    # Service.admit_recent: no worker-thread hop and no token read before the body; the call
    # still authenticates the bearer in its own transaction (the tests around this one).
    token, _ = live.issue("agent")
    admitted: list[str] = []
    admit = live.service.admit

    def counted(bearer, *args, **kwargs):
        admitted.append(bearer)
        return admit(bearer, *args, **kwargs)

    monkeypatch.setattr(live.service, "admit", counted)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with httpx.Client(base_url=live.url, headers=headers) as client:
        for i in range(3):
            body = json.dumps({"key": f"mem{i}", "text": "x"})
            assert client.post("/v/demo.note", content=body).status_code == 200
        # What memory cannot admit (here: a tier the token lacks) goes to admit, which refuses.
        error(client.post("/v/demo.admin", content=b"{}"), 403, ErrorCode.FORBIDDEN)
    assert admitted == [token, token]


def test_a_verb_the_endpoint_did_not_answer_is_the_internal_json_answer(live, monkeypatch):
    # The verb lane (taskhttp.app._App) keeps Starlette's last resort: an exception no
    # handler answered is 500 INTERNAL as JSON, with the request id, never a bare 500.
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(live.service, "call", broken)
    r = post(live, "/v/demo.note", {"key": "k", "text": "x"}, **{"X-Request-Id": "lane-1"})
    error(r, 500, ErrorCode.INTERNAL)
    assert r.headers["x-request-id"] == "lane-1"


@pytest.mark.parametrize("path", ["/v/", "/v/demo.note/more", "/v//demo.note"])
def test_verb_paths_the_route_does_not_match_are_json_404s(live, path):
    error(post(live, path, {"key": "k"}), 404, ErrorCode.NOT_FOUND)


def _audited(live, token_id: str) -> tuple[int, int]:
    """Calls of demo.note audited as anonymous TOKEN_REVOKED, and events under ``token_id``."""
    live.service.flush_refusals()
    with live.service.storage.read() as tx:
        anonymous = sum(
            e.calls
            for e in tx.audit.recent(workspace="", limit=10_000)
            if (e.actor, e.operation, e.outcome) == ("anonymous", "demo.note", "TOKEN_REVOKED")
        )
        own = sum(e.actor == token_id for e in tx.audit.recent(workspace="w1", limit=10_000))
    return anonymous, own


def test_a_token_revoked_between_admission_and_the_call_is_refused_as_before(live, monkeypatch):
    # The verb route authenticates the bearer once more inside the call's transaction (not
    # in a read of its own first): a revocation landing between the two is still refused,
    # answered and audited exactly as when the call's own authentication found it.
    token, token_id = live.issue("agent")
    admit = live.service.admit

    def admit_then_revoke(bearer, *args, **kwargs):
        actor = admit(bearer, *args, **kwargs)
        if bearer == token:
            live.revoke(token_id)
        return actor

    monkeypatch.setattr(live.service, "admit", admit_then_revoke)
    body = json.dumps({"key": "rvkbetween", "text": "x"}).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    before = _audited(live, token_id)
    r = httpx.post(live.url + "/v/demo.note", content=body, headers=headers, timeout=30)
    error(r, 401, ErrorCode.TOKEN_REVOKED)
    # Audited as a failed authentication: anonymous (counted with the other anonymous
    # refusals), nothing under the token.
    assert _audited(live, token_id) == (before[0] + 1, 0)
    already = post(live, "/v/demo.note", content=body, role="revoked")
    assert r.content == already.content
    error(post(live, "/v/demo.read", {"key": "rvkbetween"}), 404, ErrorCode.NOT_FOUND)


@pytest.mark.parametrize(
    "auth",
    [
        None,
        "Bearer",
        "Basic dXNlcjpwdw==",
        "Bearer atk_nope",
        "Bearer " + "atk_" + "0" * 16 + "_" + "0" * 64,
    ],
)
def test_missing_or_bad_credentials_are_401_with_a_challenge(live, auth):
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    r = httpx.post(live.url + "/v/demo.read", content=b'{"key": "a"}', headers=headers)
    error(r, 401, ErrorCode.UNAUTHENTICATED)
    assert r.headers["www-authenticate"] == "Bearer"


def test_malformed_json_is_400(live):
    error(post(live, "/v/demo.read", content=b'{"key": '), 400, ErrorCode.MALFORMED_JSON)
    error(
        post(live, "/v/demo.read", content=b'{"key": "a", "key": "b"}'),
        400,
        ErrorCode.MALFORMED_JSON,
    )
    error(post(live, "/v/demo.read", content=b"\xff\xfe"), 400, ErrorCode.MALFORMED_JSON)


def test_unknown_field_and_wrong_type_carry_a_json_path(live):
    err = error(post(live, "/v/demo.read", {"key": "a", "colour": 1}), 400, ErrorCode.UNKNOWN_FIELD)
    assert err["path"] == "$.colour"
    err = error(post(live, "/v/demo.read", {"key": 7}), 400, ErrorCode.WRONG_TYPE)
    assert err["path"] == "$.key"
    err = error(post(live, "/v/demo.read", {"key": "UPPER"}), 422, ErrorCode.INVALID_VALUE)
    assert err["path"] == "$.key"


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
        "application/json; boundary=x",
        "application/jsonx",
    ],
)
def test_wrong_content_type_is_415(live, content_type):
    headers = {"Authorization": f"Bearer {live.tokens['agent']}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    r = httpx.post(live.url + "/v/demo.read", content=b'{"key": "a"}', headers=headers)
    error(r, 415, ErrorCode.UNSUPPORTED_MEDIA_TYPE)


def test_json_with_utf8_charset_is_accepted(live):
    post(live, "/v/demo.note", {"key": "cs", "text": "x"})
    r = post(
        live, "/v/demo.read", {"key": "cs"}, **{"Content-Type": "application/json; charset=UTF-8"}
    )
    assert r.status_code == 200


def test_oversized_body_declared_by_content_length_is_413(live):
    body = b'{"key": "' + b"a" * REQUEST_BODY_MAX_BYTES + b'"}'
    error(post(live, "/v/demo.read", content=body), 413, ErrorCode.PAYLOAD_TOO_LARGE)


def test_oversized_chunked_body_is_413_while_streaming(live):
    sent = []

    def chunks():
        for _ in range(64):
            sent.append(1)
            yield b" " * 8192

    r = httpx.post(live.url + "/v/demo.read", content=chunks(), headers=live.headers())
    error(r, 413, ErrorCode.PAYLOAD_TOO_LARGE)


def test_an_operation_with_a_larger_bound_accepts_a_larger_body(live):
    text = "a" * (REQUEST_BODY_MAX_BYTES + 10)
    r = post(live, "/v/demo.big", {"text": text})
    assert r.status_code == 200
    assert r.json() == {"size": len(text)}


def test_unknown_verb_and_other_families_are_unknown_on_the_verb_route(live):
    for verb in ("demo.missing", "workflow.echo", "demo.gate", "workflow.collector_upload"):
        error(post(live, f"/v/{verb}", {"key": "a"}), 404, ErrorCode.UNKNOWN_OPERATION)


def test_admin_family_verbs_are_served_on_the_verb_route(live):
    error(post(live, "/v/demo.raise", {"code": "CONFLICT"}), 409, ErrorCode.CONFLICT)


def test_unknown_route_and_wrong_method_are_json_errors(live):
    r = httpx.get(live.url + "/nowhere")
    error(r, 404, ErrorCode.NOT_FOUND)
    r = httpx.get(live.url + "/v/demo.read")
    error(r, 405, ErrorCode.METHOD_NOT_ALLOWED)
    assert "POST" in r.headers["allow"]
    error(httpx.put(live.url + WF.format(repo="a", profile="p")), 405, ErrorCode.METHOD_NOT_ALLOWED)


def test_every_error_code_maps_to_its_kinds_status(live):
    allowed = {400, 401, 403, 404, 405, 409, 410, 413, 414, 415, 422, 429, 431, 500, 503}
    assert {kind.http_status for kind in ErrorKind} <= allowed
    for code in ErrorCode:
        r = post(live, "/v/demo.raise", {"code": code.value})
        error(r, code.kind.http_status, code)


def test_workflow_envelope_succeeds_with_the_capability_and_route(live):
    r = post(
        live,
        WF.format(repo="acme", profile="default"),
        {"operation": "echo", "request": {"text": "hi"}},
    )
    assert r.status_code == 200
    assert r.json() == {
        "capability": "agentscm.agent-workflow-tasks/v1",
        "schema_version": 1,
        "operation": "echo",
        "result": {"repository": "acme", "profile": "default", "workspace": "w1", "text": "hi"},
    }


@pytest.mark.parametrize("repo", ["acme%2Fwidgets", "acme/widgets"])
def test_owner_name_repositories_are_one_route_value(live, repo):
    r = post(
        live, WF.format(repo=repo, profile="p"), {"operation": "echo", "request": {"text": "x"}}
    )
    assert r.json()["result"]["repository"] == "acme/widgets"


def test_workflow_errors_use_the_same_table(live):
    path = WF.format(repo="acme", profile="p")
    error(
        post(live, path, {"operation": "raise", "request": {"code": "STALE_FENCE"}}),
        409,
        ErrorCode.STALE_FENCE,
    )
    error(post(live, path, {"operation": "nope", "request": {}}), 404, ErrorCode.UNKNOWN_OPERATION)
    error(
        post(live, path, {"operation": "echo", "request": {"text": "x"}, "actor": "me"}),
        400,
        ErrorCode.UNKNOWN_FIELD,
    )
    error(post(live, path, {"operation": "echo"}), 400, ErrorCode.MISSING_FIELD)
    error(
        post(live, path, {"operation": "echo", "request": {"text": "x"}}, role="revoked"),
        401,
        ErrorCode.TOKEN_REVOKED,
    )
    error(
        post(live, path, content=b"{}", **{"Content-Type": "text/plain"}),
        415,
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    )


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        (WF.format(repo="%2E%2E", profile="p"), 422, ErrorCode.INVALID_VALUE),
        (WF.format(repo="a%20b", profile="p"), 422, ErrorCode.INVALID_VALUE),
        (WF.format(repo="a/b/c", profile="p"), 422, ErrorCode.INVALID_VALUE),
        ("/v1/hub/workspace/repositories/acme/agent-tasks", 404, ErrorCode.NOT_FOUND),
        ("/v1/hub/workspace/repositories/acme/profiles/p/other", 404, ErrorCode.NOT_FOUND),
    ],
)
def test_malformed_routes_are_refused(live, path, status, code):
    error(post(live, path, {"operation": "echo", "request": {"text": "x"}}), status, code)


def test_collector_upload_takes_raw_bytes_and_names_the_capability(live):
    data = bytes(range(256)) * 16
    path = WF.format(repo="acme", profile="p") + "/collector-upload"
    r = post(live, path, content=data, **{"Content-Type": "application/octet-stream"})
    assert r.status_code == 200
    body = r.json()
    assert body["operation"] == "collector_upload"
    assert body["result"] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_collector_upload_is_bounded_at_16_mib(live):
    path = WF.format(repo="acme", profile="p") + "/collector-upload"
    big = b"\0" * (COLLECTOR_ENVELOPE_MAX_BYTES + 1)
    error(
        post(live, path, content=big, **{"Content-Type": "application/octet-stream"}),
        413,
        ErrorCode.PAYLOAD_TOO_LARGE,
    )

    def chunks():
        for _ in range(17):
            yield b"\0" * (1024 * 1024)

    r = httpx.post(
        live.url + path,
        content=chunks(),
        headers=live.headers(**{"Content-Type": "application/octet-stream"}),
    )
    error(r, 413, ErrorCode.PAYLOAD_TOO_LARGE)
    error(post(live, path, content=b"x"), 415, ErrorCode.UNSUPPORTED_MEDIA_TYPE)


def test_collector_upload_before_the_operation_exists_is_unknown_not_500(tmp_path):
    server = Live(tmp_path, upload=False).start()
    try:
        path = WF.format(repo="acme", profile="p") + "/collector-upload"
        r = post(server, path, content=b"abc", **{"Content-Type": "application/octet-stream"})
        error(r, 404, ErrorCode.UNKNOWN_OPERATION)
    finally:
        server.stop()


@pytest.mark.parametrize("path", ["/v1/hub/health", "/health", "/healthz"])
def test_health_needs_no_token_and_pings_storage(live, path):
    r = httpx.get(live.url + path)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["status"] == "ok"
    assert body["backend"] == live.service.storage.backend
    assert body["schema"] == live.service.storage.schema()
    assert body["schema"]["queue"] >= 1
    assert httpx.post(live.url + path, json={}).status_code == 405


class _DownStorage:
    def __init__(self, inner):
        self.inner = inner

    def ping(self):
        from taskcore import TaskError

        raise TaskError(ErrorCode.STORAGE_UNAVAILABLE, "storage does not answer")

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_health_is_503_when_storage_does_not_answer(tmp_path):
    real = Service.open(tmp_path)
    service = Service(_DownStorage(real.storage), config=real.config, registry=real.registry)
    with BackgroundServer(create_app(service)) as url:
        for path in ("/v1/hub/health", "/health", "/healthz"):
            error(httpx.get(url + path), 503, ErrorCode.STORAGE_UNAVAILABLE)
    real.close()


def test_openapi_lists_every_http_operation(live):
    doc = httpx.get(live.url + "/openapi.json").json()
    for op in live.service.registry.select():
        if op.surface.value in ("queue", "admin") and not op.raw_input:
            assert f"/v/{op.name}" in doc["paths"]
    assert WF.replace("{repo}", "{repository}") in doc["paths"]


def test_every_call_is_audited_once_including_transport_refusals(tmp_path):
    server = Live(tmp_path).start()
    try:
        before = server.service.audit_count()
        # Deltas: on PostgreSQL the module's other services share the database.
        before_read = server.service.audit_count(operation="demo.read")
        post(server, "/v/demo.read", {"key": "a"})  # handler refusal
        post(server, "/v/demo.read", content=b"x", **{"Content-Type": "text/plain"})  # 415
        post(server, "/v/demo.read", content=b" " * (REQUEST_BODY_MAX_BYTES + 1))  # 413
        post(server, "/v/demo.read", {"key": "a"}, role=None)  # 401
        post(server, WF.format(repo="%2E%2E", profile="p"), {})  # bad route
        assert server.service.audit_count() == before + 5
        assert server.service.audit_count(operation="demo.read") == before_read + 4
    finally:
        server.stop()


methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
paths = st.sampled_from(
    [
        "/v/demo.note",
        "/v/demo.read",
        "/v/",
        "/v/%00",
        "/v/demo.read/x",
        "/openapi.json",
        "/v1/hub/health",
        WF.format(repo="a", profile="b"),
        WF.format(repo="a", profile="b") + "/collector-upload",
        "/v1/hub/workspace/repositories/%2e%2e/profiles/p/agent-tasks",
        "/mcp",
        "/v1/hub/workspace/mcp?repository=a&profile=b",
        "/v1/hub/workspace/mcp",
    ]
)
content_types = st.sampled_from(
    [
        None,
        "application/json",
        "text/plain",
        "application/octet-stream",
        "application/json; charset=utf-8",
    ]
)
bodies = st.one_of(
    st.binary(max_size=256),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
        max_leaves=10,
    ).map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {
            "operation": st.text(max_size=12),
            "request": st.dictionaries(
                st.sampled_from(["text", "key", "code", "x"]), st.text(max_size=10) | st.integers()
            ),
        }
    ).map(lambda v: json.dumps(v).encode()),
)
roles = st.sampled_from([None, "agent", "admin", "reader", "revoked"])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(method=methods, path=paths, content_type=content_types, body=bodies, role=roles)
def test_no_bad_input_yields_500(live, method, path, content_type, body, role):
    headers = {"Accept": "application/json, text/event-stream"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    if role is not None:
        headers["Authorization"] = f"Bearer {live.tokens[role]}"
    r = httpx.request(method, live.url + path, content=body, headers=headers, timeout=10)
    assert r.status_code < 500, r.text


_LAZY_MCP_PROBE = """
import sys, json, threading
import httpx
from taskcore import Service
from taskcore.auth import issue_token
from taskcore import Tier
from taskhttp import BackgroundServer, create_app

service = Service.open(sys.argv[1])
token = issue_token(service.storage, service.clock, workspace="w", tier=Tier.AGENT).token
auth = {"Authorization": f"Bearer {token}"}
report = {}
with BackgroundServer(create_app(service)) as url:
    httpx.get(url + "/v1/hub/health")
    httpx.post(url + "/v/observe.whoami", json={}, headers=auth)
    report["before"] = "mcp" in sys.modules
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}}
    headers = {**auth, "Accept": "application/json, text/event-stream"}
    answers = []
    def first():
        # The first request loads the SDK: seconds on a loaded machine, past httpx's 5 s default.
        answers.append(httpx.post(url + "/mcp", json=init, headers=headers, timeout=60).status_code)
    racers = [threading.Thread(target=first) for _ in range(4)]
    for t in racers: t.start()
    for t in racers: t.join()
    report["answers"] = answers
    report["after"] = "mcp" in sys.modules
    listed = httpx.post(url + "/mcp", headers=headers, timeout=60,
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}).json()
    report["tools"] = len(listed["result"]["tools"])
service.close()
print(json.dumps(report))
"""


def test_the_mcp_sdk_loads_on_the_first_mcp_request_only(tmp_path):
    # The SDK is most of serve's start-up; a service no MCP client talks to never loads it.
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _LAZY_MCP_PROBE, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["before"] is False
    assert report["answers"] == [200, 200, 200, 200]  # four racing first requests, one start
    assert report["after"] is True
    assert report["tools"] > 0
