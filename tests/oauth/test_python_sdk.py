"""The official Python SDK client's OAuth provider against ``agent-task serve``, end to end.

Discovery from the 401 (RFC 9728 metadata, RFC 8414 metadata), dynamic client registration
or a client ID metadata document, ``/authorize`` with PKCE S256, consent (on the board in
Chromium, or on the host with ``agent-task admin oauth approve``), the code exchange with
the ``iss`` check (RFC 9207), ``tools/list`` and a tool call, a refresh (rotation), the
step-up challenge, revocation (RFC 7009) and then 401.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.oauth.support import (
    ConsentDesk,
    OAuthWorld,
    approve_on_host,
    callback_params,
    consent_in_browser,
    consent_url_of,
    request_id_of,
)

REDIRECT = "http://127.0.0.1:47123/callback"


class MemoryStorage:
    """The SDK's token storage protocol, in memory (what a client keeps between runs)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture
def world(tmp_path):
    w = OAuthWorld(tmp_path / "data")
    yield w
    w.stop()


def _provider(world: OAuthWorld, desk: ConsentDesk, storage: MemoryStorage, **extra: Any):
    answered: dict[str, str] = {}

    async def redirect_handler(url: str) -> None:
        answered["url"] = await anyio.to_thread.run_sync(desk.ask, url)

    async def callback_handler() -> AuthorizationCodeResult:
        params = callback_params(answered.pop("url"))
        if "error" in params:
            raise RuntimeError(f"authorization refused: {params['error']}")
        return AuthorizationCodeResult(
            code=params["code"], state=params.get("state"), iss=params.get("iss")
        )

    metadata = OAuthClientMetadata(
        client_name="sdk-python-test",
        redirect_uris=[AnyUrl(REDIRECT)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return OAuthClientProvider(
        server_url=world.url + "/mcp",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        **extra,
    )


def _in_thread(fn) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = anyio.run(fn)
        except BaseException as exc:  # reported by the test's thread
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


def _finish(thread: threading.Thread, out: dict[str, Any]) -> Any:
    thread.join(timeout=120)
    assert not thread.is_alive(), "the client did not finish"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _client(world: OAuthWorld, provider: OAuthClientProvider) -> Client:
    http = create_mcp_http_client(auth=provider)
    return Client(streamable_http_client(world.url + "/mcp", http_client=http))


def _text(result: Any) -> Any:
    return json.loads(result.content[0].text)


def test_python_sdk_dcr_consent_in_the_browser_refresh_revoke(world, page):
    desk, storage = ConsentDesk(), MemoryStorage()
    provider = _provider(world, desk, storage)

    async def first_session() -> dict[str, Any]:
        async with _client(world, provider) as client:
            tools = await client.list_tools()
            who = await client.call_tool("observe_whoami", {})
            created = await client.call_tool("agenttask_create", {"verb": "agent.run"})
            return {
                "tools": [t.name for t in tools.tools],
                "who": _text(who),
                "created": _text(created),
            }

    thread, out = _in_thread(first_session)
    authorize = desk.next_request()
    assert "code_challenge_method=S256" in authorize
    consent = consent_url_of(authorize)
    assert "/board/oauth/oar_" in consent
    redirect = consent_in_browser(page, world, consent, tier="member", autonomy=1)
    params = callback_params(redirect)
    assert redirect.startswith(REDIRECT)
    assert params["iss"] == world.url
    desk.answer(redirect)
    first = _finish(thread, out)

    assert "agenttask_claimNext" in first["tools"]
    assert first["who"]["workspace"] == "ws1"
    assert first["who"]["tokenId"].startswith("oag_")
    assert first["who"]["autonomy"] == 1
    assert first["created"]["status"] == "QUEUED"
    assert storage.client is not None
    assert storage.client.client_secret
    assert storage.tokens is not None
    assert storage.tokens.refresh_token
    grant_id = first["who"]["tokenId"]

    # The token expires (as far as the client knows): the SDK refreshes with rotation.
    spent = storage.tokens.refresh_token
    provider.context.token_expiry_time = time.time() - 1

    async def after_refresh() -> Any:
        async with _client(world, provider) as client:
            return _text(await client.call_tool("observe_whoami", {}))

    assert _finish(*_in_thread(after_refresh))["tokenId"] == grant_id
    assert storage.tokens.refresh_token != spent

    # Revocation (RFC 7009) by the client, then the MCP endpoint answers 401 with the
    # challenge that starts the flow again.
    access = storage.tokens.access_token
    revoked = httpx.post(
        world.url + "/revoke",
        data={
            "token": storage.tokens.refresh_token,
            "token_type_hint": "refresh_token",
            "client_id": storage.client.client_id,
            "client_secret": storage.client.client_secret,
        },
        timeout=30,
    )
    assert revoked.status_code == 200
    after = httpx.post(
        world.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Authorization": f"Bearer {access}",
            "Accept": "application/json, text/event-stream",
        },
        timeout=30,
    )
    assert after.status_code == 401
    challenge = after.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{world.url}/.well-known/oauth-protected-resource/mcp"' in challenge
    grants = world.call(world.person, "oauth.grants", {"includeRevoked": True})["grants"]
    assert [g["grantId"] for g in grants if g["revokedAtMs"]] == [grant_id]
    audit = world.call(world.person, "observe.audit", {"actor": grant_id})["events"]
    operations = {e["operation"] for e in audit}
    assert {"oauth.token.issue", "oauth.token.refresh", "oauth.token.revoke"} <= operations


def test_python_sdk_headless_consent_with_the_host_cli_and_the_step_up(world):
    desk, storage = ConsentDesk(), MemoryStorage()
    provider = _provider(world, desk, storage)

    async def session() -> dict[str, Any]:
        async with _client(world, provider) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            # A write tool is beyond a read-only token: 403 insufficient_scope, the SDK
            # authorizes again with the wider scope (the step-up), and the call goes through.
            created = await client.call_tool("agenttask_create", {"verb": "agent.run"})
            return {"tools": tools, "created": _text(created)}

    thread, out = _in_thread(session)
    # The person grants read only first; the write call then steps up to autonomy 1.
    for autonomy in (0, 1):
        authorize = desk.next_request()
        request_id = request_id_of(consent_url_of(authorize))
        desk.answer(approve_on_host(world, request_id, tier="member", autonomy=autonomy))
    result = _finish(thread, out)
    assert "agenttask_create" not in result["tools"]  # read only at first
    assert result["created"]["status"] == "QUEUED"
    assert "agent-task:write" in (storage.tokens.scope or "")
