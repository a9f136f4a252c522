"""The authorization server's and the protected resource's HTTP surface, as a client sees it."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets

import httpx
import pytest

from tests.oauth.support import OAuthWorld, callback_params, consent_url_of, request_id_of

MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
WORKSPACE = "/v1/hub/workspace/mcp"


@pytest.fixture
def world(tmp_path):
    w = OAuthWorld(tmp_path / "data")
    yield w
    w.stop()


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _register(world: OAuthWorld, **extra) -> dict:
    body = {"client_name": "probe", "redirect_uris": ["http://127.0.0.1:9/cb"], **extra}
    answer = httpx.post(world.url + "/register", json=body, timeout=30)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _authorize(world: OAuthWorld, client: dict, challenge: str, **params) -> str:
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": "http://127.0.0.1:9/cb",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st",
        "resource": world.url + "/mcp",
        **params,
    }
    return str(httpx.URL(world.url + "/authorize", params=query))


def _tokens(
    world: OAuthWorld, *, tier: str = "agent", autonomy: int = 1, **params
) -> tuple[dict, dict]:
    client = _register(world)
    verifier, challenge = _pkce()
    request_id = request_id_of(consent_url_of(_authorize(world, client, challenge, **params)))
    decided = world.call(
        world.person,
        "oauth.request.approve",
        {"requestId": request_id, "tier": tier, "autonomy": autonomy},
    )
    code = callback_params(decided["redirectTo"])["code"]
    answer = httpx.post(
        world.url + "/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1:9/cb",
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
            "code_verifier": verifier,
        },
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return client, answer.json()


def test_metadata_documents_name_one_issuer_and_every_resource(world):
    meta = httpx.get(world.url + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert meta["issuer"] == world.url
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert meta["client_id_metadata_document_supported"] is True
    assert meta["registration_endpoint"] == world.url + "/register"
    assert meta["revocation_endpoint"] == world.url + "/revoke"
    for path, resource in (
        ("", world.url),
        ("/mcp", world.url + "/mcp"),
        (WORKSPACE, world.url + WORKSPACE),
    ):
        prm = httpx.get(world.url + "/.well-known/oauth-protected-resource" + path, timeout=30)
        assert prm.status_code == 200
        assert prm.json()["resource"] == resource
        assert prm.json()["authorization_servers"] == [world.url]
        assert "agent-task:write" in prm.json()["scopes_supported"]


@pytest.mark.parametrize("path", ["/mcp", WORKSPACE + "?repository=r&profile=p"])
def test_a_request_without_a_token_gets_the_challenge_that_starts_discovery(world, path):
    answer = httpx.post(world.url + path, json=LIST, headers=MCP_ACCEPT, timeout=30)
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    resource_path = path.split("?")[0]
    assert challenge.startswith("Bearer ")
    assert (
        f'resource_metadata="{world.url}/.well-known/oauth-protected-resource{resource_path}"'
        in challenge
    )
    assert 'scope="agent-task:read agent-task:write' in challenge
    assert "error=" not in challenge  # no credential was sent


def test_a_host_that_is_not_loopback_gets_no_oauth_without_a_public_url(world):
    other = {"Host": "tasks.example.com"}
    meta = httpx.get(
        world.url + "/.well-known/oauth-authorization-server", headers=other, timeout=30
    )
    assert meta.status_code == 404
    assert "--public-url" in meta.json()["error"]
    # A name that is not the server's is refused outright (DNS-rebinding protection); an
    # address (a LAN client) gets the 401, without a metadata URL.
    answer = httpx.post(world.url + "/mcp", json=LIST, headers={**MCP_ACCEPT, **other}, timeout=30)
    assert answer.status_code == 403
    assert answer.json()["code"] == "HOST_NOT_ALLOWED"
    address = {"Host": "10.1.2.3:8787"}
    answer = httpx.post(
        world.url + "/mcp", json=LIST, headers={**MCP_ACCEPT, **address}, timeout=30
    )
    assert answer.status_code == 401
    assert "resource_metadata" not in answer.headers["www-authenticate"]


def test_the_public_url_names_the_issuer_whatever_the_host(tmp_path):
    world = OAuthWorld(tmp_path / "data", public_url="https://tasks.example.com")
    try:
        meta = httpx.get(world.url + "/.well-known/oauth-authorization-server", timeout=30).json()
        assert meta["issuer"] == "https://tasks.example.com"
        assert meta["token_endpoint"] == "https://tasks.example.com/token"
        answer = httpx.post(world.url + "/mcp", json=LIST, headers=MCP_ACCEPT, timeout=30)
        assert (
            "https://tasks.example.com/.well-known/oauth-protected-resource/mcp"
            in (answer.headers["www-authenticate"])
        )
    finally:
        world.stop()


def test_a_token_works_at_its_resource_only_and_never_on_other_doors(world):
    _, tokens = _tokens(world)
    bearer = {"Authorization": f"Bearer {tokens['access_token']}", **MCP_ACCEPT}
    ok = httpx.post(world.url + "/mcp", json=LIST, headers=bearer, timeout=30)
    assert ok.status_code == 200
    other = httpx.post(
        world.url + WORKSPACE + "?repository=r&profile=p", json=LIST, headers=bearer, timeout=30
    )
    assert other.status_code == 401
    assert "issued for" in other.json()["error"]
    assert 'error="invalid_token"' in other.headers["www-authenticate"]
    verb = httpx.post(world.url + "/v/observe.whoami", json={}, headers=bearer, timeout=30)
    assert verb.status_code == 401


def test_a_static_bearer_token_keeps_working_on_the_mcp_endpoint(world):
    headers = {"Authorization": f"Bearer {world.agent}", **MCP_ACCEPT}
    answer = httpx.post(world.url + "/mcp", json=LIST, headers=headers, timeout=30)
    assert answer.status_code == 200
    assert answer.json()["result"]["tools"]


def test_a_call_beyond_the_tokens_scope_gets_the_step_up_challenge(world):
    _, tokens = _tokens(world, autonomy=0)
    assert tokens["scope"] == "agent-task:read"
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "agenttask_claimNext", "arguments": {}},
    }
    headers = {"Authorization": f"Bearer {tokens['access_token']}", **MCP_ACCEPT}
    answer = httpx.post(world.url + "/mcp", json=call, headers=headers, timeout=30)
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="agent-task:read agent-task:write"' in challenge
    assert answer.json()["code"] == "FORBIDDEN"


def test_pkce_is_s256_only_and_a_wrong_verifier_is_refused(world):
    client = _register(world)
    plain = httpx.get(
        _authorize(world, client, "x" * 43, code_challenge_method="plain"),
        follow_redirects=False,
        timeout=30,
    )
    assert plain.status_code in (302, 400)
    if plain.status_code == 302:
        assert "error=invalid_request" in plain.headers["location"]
    _, challenge = _pkce()
    request_id = request_id_of(consent_url_of(_authorize(world, client, challenge)))
    decided = world.call(world.person, "oauth.request.approve", {"requestId": request_id})
    code = callback_params(decided["redirectTo"])["code"]
    wrong = httpx.post(
        world.url + "/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1:9/cb",
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
            "code_verifier": "w" * 50,
        },
        timeout=30,
    )
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_grant"


def test_a_confidential_client_must_present_its_secret_which_is_stored_hashed(world):
    client = _register(world)
    bad = httpx.post(
        world.url + "/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": "atr_" + "0" * 16 + "_" + "0" * 64,
            "client_id": client["client_id"],
            "client_secret": "not-it",
        },
        timeout=30,
    )
    assert bad.status_code == 401
    assert bad.json()["error"] == "invalid_client"
    with world.service.storage.read() as tx:
        record = tx.oauth.get_client(client["client_id"])
    assert record is not None
    assert record.secret_hash == hashlib.sha256(client["client_secret"].encode()).hexdigest()
    assert client["client_secret"] not in record.metadata_json


def test_an_unknown_resource_is_invalid_target_and_an_unknown_scope_invalid_scope(world):
    client = _register(world)
    _, challenge = _pkce()
    target = httpx.get(
        _authorize(world, client, challenge, resource="https://elsewhere.example/mcp"),
        follow_redirects=False,
        timeout=30,
    )
    assert "error=invalid_target" in target.headers["location"]
    assert "state=st" in target.headers["location"]


def test_registration_bodies_are_bounded(world):
    huge = {"client_name": "x" * 20_000, "redirect_uris": ["http://127.0.0.1:9/cb"]}
    answer = httpx.post(world.url + "/register", content=json.dumps(huge), timeout=30)
    assert answer.status_code in (400, 413)


def test_the_consent_page_needs_a_sign_in_and_returns_to_itself(world):
    client = _register(world)
    _, challenge = _pkce()
    consent = consent_url_of(_authorize(world, client, challenge))
    page = httpx.get(consent, follow_redirects=False, timeout=30)
    assert page.status_code == 303
    assert page.headers["location"].endswith(
        "/board/login?next=%2Foauth%2F" + request_id_of(consent)
    )


def test_the_operator_lists_and_revokes_grants_and_the_token_stops(world):
    _, tokens = _tokens(world)
    grants = world.call(world.person, "oauth.grants", {})["grants"]
    assert len(grants) == 1
    revoked = world.call(world.person, "oauth.grant.revoke", {"grantId": grants[0]["grantId"]})
    assert revoked["revokedAtMs"] is not None
    headers = {"Authorization": f"Bearer {tokens['access_token']}", **MCP_ACCEPT}
    assert httpx.post(world.url + "/mcp", json=LIST, headers=headers, timeout=30).status_code == 401
