"""The authorization server's steps against a real journal: consent, codes, rotation, reuse."""

from __future__ import annotations

import base64
import hashlib
import threading

import pytest
from taskcore import Service, Tier
from taskcore.actors import Actor
from taskcore.auth import issue_token
from taskcore.errors import ErrorCode, TaskError
from taskcore.oauth.server import OAuthRefusal, OAuthServer, decide_in
from taskcore.oauth_tokens import is_access_token

BASE = "http://127.0.0.1:8787"
MCP = BASE + "/mcp"
RESOURCES = (BASE, MCP, BASE + "/v1/hub/workspace/mcp")
PERSON = Actor(token_id="0123456789abcdef", workspace="ws1", tier=Tier.MEMBER, autonomy=2)


@pytest.fixture
def service(tmp_path):
    svc = Service.open(tmp_path / "data")
    yield svc
    svc.close()


@pytest.fixture
def server(service):
    return OAuthServer(service)


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _client(server, name="Claude"):
    return server.register(
        {"client_name": name, "redirect_uris": ["http://127.0.0.1:9/cb"]},
        client_id="c-" + name,
        secret=None,
    )


def _begin(server, client, *, scope=None, resource=MCP, state="s1"):
    return server.begin(
        client,
        redirect_uri="http://127.0.0.1:9/cb",
        explicit=True,
        scopes=scope,
        resource=resource,
        resources=RESOURCES,
        issuer=BASE,
        code_challenge=_challenge("v" * 43),
        state=state,
    )


def _approve(service, request_id, *, tier=Tier.AGENT, autonomy=1, decider=PERSON):
    with service.write() as tx:
        return decide_in(
            tx,
            service.clock.now_ms(),
            request_id,
            decider=decider,
            approve=True,
            tier=tier,
            autonomy=autonomy,
        )


def _code_of(url: str) -> str:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(url).query)["code"][0]


def _tokens(service, server, **grant):
    client = _client(server)
    request = _begin(server, client, scope=grant.pop("scope", None))
    _, _, url = _approve(service, request.request_id, **grant)
    return client, server.exchange_code(client.client_id, _code_of(url))


def test_an_approved_code_becomes_tokens_that_authenticate_as_the_grant_at_its_resource(
    service, server
):
    _, issued = _tokens(service, server, scope=["agent-task:read", "agent-task:write"])
    assert is_access_token(issued.access_token)
    actor = service.authenticate(issued.access_token, resource=MCP)
    assert (actor.workspace, actor.tier, actor.autonomy) == ("ws1", Tier.AGENT, 1)
    assert actor.token_id == issued.grant_id
    assert issued.scope == "agent-task:read agent-task:write"
    # Only the SHA-256 of the secret is stored.
    _, token_id, secret = issued.access_token.split("_")
    with service.storage.read() as tx:
        row = tx.oauth.get_token(token_id)
    assert row is not None
    assert row.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert service.audit_count(operation="oauth.token.issue") == 1
    assert service.audit_count(operation="oauth.authorize") == 1


def test_an_access_token_for_one_resource_is_refused_at_another_and_on_other_doors(service, server):
    _, issued = _tokens(service, server)
    with pytest.raises(TaskError) as other:
        service.authenticate(issued.access_token, resource=BASE + "/v1/hub/workspace/mcp")
    assert other.value.code is ErrorCode.UNAUTHENTICATED
    assert "issued for" in other.value.message
    with pytest.raises(TaskError) as plain:
        service.authenticate(issued.access_token)
    assert plain.value.code is ErrorCode.UNAUTHENTICATED


def test_the_grant_never_exceeds_the_person_nor_the_requested_scope(service, server):
    client = _client(server)
    request = _begin(server, client, scope=["agent-task:read"])
    with pytest.raises(TaskError) as above:
        _approve(service, request.request_id, autonomy=3)
    assert above.value.code is ErrorCode.AUTONOMY_EXCEEDED
    with pytest.raises(TaskError) as tier:
        _approve(service, request.request_id, tier=Tier.ADMIN)
    assert tier.value.code is ErrorCode.FORBIDDEN
    _, grant, _ = _approve(service, request.request_id, tier=Tier.MEMBER, autonomy=2)
    assert (grant.tier, grant.autonomy, grant.scope) == ("agent", 0, "agent-task:read")


def test_a_code_used_twice_revokes_the_tokens_it_produced(service, server):
    client = _client(server)
    request = _begin(server, client)
    _, _, url = _approve(service, request.request_id)
    code = _code_of(url)
    issued = server.exchange_code(client.client_id, code)
    with pytest.raises(OAuthRefusal) as again:
        server.exchange_code(client.client_id, code)
    assert again.value.oauth_error == "invalid_grant"
    with pytest.raises(TaskError):
        service.authenticate(issued.access_token, resource=MCP)
    assert service.audit_count(operation="oauth.token.reuse") == 1


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_family(service, server):
    client, first = _tokens(service, server)
    second = server.refresh(client.client_id, first.refresh_token, [])
    assert second.refresh_token != first.refresh_token
    assert service.authenticate(second.access_token, resource=MCP).token_id == first.grant_id
    # The spent refresh token again: reuse, and the whole family goes.
    assert server.refresh_token(client.client_id, first.refresh_token) is None
    for token in (first.access_token, second.access_token):
        with pytest.raises(TaskError):
            service.authenticate(token, resource=MCP)
    with pytest.raises(OAuthRefusal):
        server.refresh(client.client_id, second.refresh_token, [])


def test_two_racing_refreshes_issue_once_and_revoke_the_family(service, server):
    client, first = _tokens(service, server)
    outcomes: list[object] = []
    barrier = threading.Barrier(2)

    def refresh() -> None:
        barrier.wait()
        try:
            outcomes.append(server.refresh(client.client_id, first.refresh_token, []))
        except OAuthRefusal as err:
            outcomes.append(err.oauth_error)

    threads = [threading.Thread(target=refresh) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(type, outcomes), key=str) == sorted([str, type(first)], key=str)
    with service.storage.read() as tx:
        grant = tx.oauth.get_grant(first.grant_id)
    assert grant is not None
    assert grant.revoked_at_ms is not None


def test_a_refresh_may_narrow_the_scope_but_not_widen_it(service, server):
    client, first = _tokens(service, server)
    narrowed = server.refresh(client.client_id, first.refresh_token, ["agent-task:read"])
    actor = service.authenticate(narrowed.access_token, resource=MCP)
    assert actor.autonomy == 0
    with pytest.raises(OAuthRefusal) as wider:
        server.refresh(
            client.client_id, narrowed.refresh_token, ["agent-task:admin", "agent-task:read"]
        )
    assert wider.value.oauth_error == "invalid_scope"


def test_revocation_of_either_token_revokes_the_family_and_is_audited(service, server):
    client, issued = _tokens(service, server)
    assert server.revoke("someone-else", issued.access_token) is False
    assert server.revoke(client.client_id, issued.refresh_token) is True
    with pytest.raises(TaskError):
        service.authenticate(issued.access_token, resource=MCP)
    assert service.audit_count(operation="oauth.token.revoke") == 1


def test_a_denied_request_redirects_with_access_denied_state_and_iss(service, server):
    client = _client(server)
    request = _begin(server, client, state="xyz")
    with service.write() as tx:
        record, grant, url = decide_in(
            tx, service.clock.now_ms(), request.request_id, decider=PERSON, approve=False
        )
    assert grant is None
    assert record.status == "denied"
    assert "error=access_denied" in url
    assert "state=xyz" in url
    assert "iss=http" in url
    with pytest.raises(TaskError) as again:
        _approve(service, request.request_id)
    assert again.value.code is ErrorCode.CONFLICT


def test_unknown_resource_and_scope_are_refused_before_anything_is_stored(service, server):
    client = _client(server)
    with pytest.raises(OAuthRefusal) as target:
        _begin(server, client, resource="https://elsewhere.example/mcp")
    assert target.value.oauth_error == "invalid_target"
    with pytest.raises(OAuthRefusal) as scope:
        _begin(server, client, scope=["root"])
    assert scope.value.oauth_error == "invalid_scope"
    with service.storage.read() as tx:
        assert tx.oauth.count_pending(0) == 0


def test_a_revoked_grant_is_refused_inside_the_call_that_holds_its_actor(service, server):
    _, issued = _tokens(service, server, autonomy=1)
    actor = service.authenticate(issued.access_token, resource=MCP)
    with service.write() as tx:
        tx.oauth.revoke_grant(actor.token_id, service.clock.now_ms(), "test")
    with pytest.raises(TaskError) as refused:
        service.dispatch(actor, "observe.whoami", b"{}")
    assert refused.value.code is ErrorCode.TOKEN_REVOKED


def test_static_bearer_tokens_still_authenticate_everywhere(service):
    issued = issue_token(service.storage, service.clock, workspace="w", tier=Tier.AGENT)
    assert service.authenticate(issued.token).workspace == "w"
    assert service.authenticate(issued.token, resource=MCP).workspace == "w"
