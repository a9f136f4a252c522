"""OAuth on the HTTP app: the authorization server's endpoints and the MCP resource side.

The resource side is the 401 challenge and the 403 step-up of the MCP endpoints.

The endpoints are :class:`taskmcp.auth.OAuthEndpoints` (the MCP SDK's handlers over
:class:`taskcore.oauth.server.OAuthServer`); like the MCP endpoints they import the SDK on
the first request that needs it. The MCP endpoints' answers come from here:

* every 401 carries ``WWW-Authenticate: Bearer resource_metadata="<RFC 9728 document of
  this endpoint>", scope="<the scopes to ask for>"`` (and ``error="invalid_token"`` when a
  credential was sent), so a client can find the authorization server (MCP authorization);
* a call an OAuth token's scope does not reach is 403 with
  ``error="insufficient_scope"`` and the scopes it needs (the step-up challenge).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import anyio
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send
from taskcore import ErrorCode, Service, TaskError
from taskcore.errors import ErrorKind
from taskcore.oauth.server import OAuthServer
from taskcore.oauth_tokens import is_access_token
from taskcore.scopes import SCOPES_SUPPORTED, required_scopes, scopes_for, split_scope
from taskmcp.family import Family, error_response
from taskmcp.site import bearer_challenge

from taskhttp.threads import WorkerPool

if TYPE_CHECKING:
    from taskcore import Actor
    from taskmcp.auth import OAuthEndpoints

__all__ = ["LazyOAuth", "challenge", "challenged", "step_up"]


class LazyOAuth:
    """The authorization server's endpoints, built on the first request to one of them."""

    def __init__(
        self,
        service: Service,
        pool: WorkerPool,
        *,
        public_url: str | None,
        resource_paths: tuple[str, ...],
        consent_path: str,
        allow_private_client_urls: bool = False,
    ) -> None:
        self.server = OAuthServer(service, allow_private_client_urls=allow_private_client_urls)
        self.pool = pool
        self.public_url = public_url
        self.resource_paths = resource_paths
        self.consent_path = consent_path
        self._endpoints: OAuthEndpoints | None = None
        self._lock = anyio.Lock()

    async def _built(self) -> OAuthEndpoints:
        if self._endpoints is None:
            async with self._lock:
                if self._endpoints is None:
                    module = await self.pool.run(importlib.import_module, "taskmcp.auth")
                    self._endpoints = module.OAuthEndpoints(
                        self.server,
                        self.pool.run,
                        public_url=self.public_url,
                        resource_paths=self.resource_paths,
                        consent_path=self.consent_path,
                    )
        return self._endpoints

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one OAuth request."""
        endpoints = await self._built()
        await endpoints(scope, receive, send)


def challenge(base: str | None, path: str) -> str:
    """The ``WWW-Authenticate`` value of a 401 for a credential that no longer holds."""
    return bearer_challenge(base, path, SCOPES_SUPPORTED, error="invalid_token")


def challenged(err: TaskError, *, base: str | None, path: str, bearer: str | None) -> Response:
    """The ``{error, code}`` answer of a refused MCP request, with the OAuth challenge on 401."""
    response = error_response(err)
    if err.code.kind is ErrorKind.UNAUTHENTICATED:
        response.headers["WWW-Authenticate"] = bearer_challenge(
            base,
            path,
            SCOPES_SUPPORTED,
            error="invalid_token" if bearer else None,
            description=err.message if bearer else None,
        )
    return response


def step_up(
    service: Service,
    family: Family,
    bearer: str | None,
    actor: Actor,
    message: Any,
    *,
    base: str | None,
    path: str,
) -> tuple[Response, TaskError] | None:
    """The 403 step-up answer when an OAuth token's scope does not reach the tool it calls.

    Only for ``tools/call`` of a known tool by an OAuth access token whose actor the tool's
    tier or autonomy is above; everything else (``None``) goes on to the SDK, which answers
    any other refusal as a tool error. Returns the answer and the error to audit.
    """
    if not is_access_token(bearer) or not isinstance(message, dict):
        return None
    if message.get("method") != "tools/call" or not isinstance(message.get("params"), dict):
        return None
    tool = message["params"].get("name")
    op = service.registry.for_tool(tool, family.surfaces) if isinstance(tool, str) else None
    if op is None or op.admits(actor):
        return None
    needed = required_scopes(op.min_tier, op.risk)
    held = scopes_for(actor.tier, actor.autonomy)
    wanted = split_scope(" ".join((*held, *needed)))
    err = TaskError(
        ErrorCode.FORBIDDEN,
        f"{op.tool_name} needs the scope {' '.join(needed)}; authorize again with it",
    )
    response = JSONResponse(err.to_json(), status_code=403)
    response.headers["WWW-Authenticate"] = bearer_challenge(
        base, path, wanted, error="insufficient_scope", description=err.message
    )
    return response, err
