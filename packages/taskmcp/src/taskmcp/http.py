"""Streamable HTTP MCP endpoints, authenticated by the service's bearer tokens.

:class:`McpEndpoint` is an ASGI app: it authenticates ``Authorization: Bearer <token>`` (and,
for the workspace family, reads ``repository`` and ``profile`` from the query string) before
the SDK sees the request, answering ``{error, code}`` with the error's HTTP status otherwise,
and leaves the actor and route in the request scope for :func:`~taskmcp.server.scope_principal`.
The SDK's session manager runs stateless with JSON responses: every POST stands alone, so
every POST is authenticated and a revoked token is refused on its next request. A request
that asks for progress (``_meta.progressToken``; a waiting ``agenttask_claimNext``) is
answered as an event stream instead, so its ``notifications/progress`` reach the client
before the answer (:func:`wants_stream`, decided by the HTTP app, which has parsed the body). GET (a
standalone event stream) and DELETE (ending a session) have nothing to serve and answer 405.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send
from taskcore import Actor, ErrorCode, Route, Service, TaskError
from taskcore.auth import bearer_from_header

from taskmcp.family import (
    MCP_ENVELOPE_OVERHEAD_BYTES,
    SCOPE_CHALLENGE_KEY,
    SCOPE_RESOURCE_KEY,
    SCOPE_STREAM_KEY,
    Family,
    error_response,
)
from taskmcp.family import max_body as default_max_body
from taskmcp.server import SCOPE_ACTOR_KEY, SCOPE_ROUTE_KEY, build_server, scope_principal

__all__ = ["MCP_ENVELOPE_OVERHEAD_BYTES", "McpEndpoint", "error_response"]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _route_from_query(scope: Scope) -> Route:
    query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
    repository = query.get("repository", [])
    profile = query.get("profile", [])
    if len(repository) != 1 or len(profile) != 1:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "the workspace MCP endpoint needs exactly one ?repository=R&profile=P",
        )
    return Route(repository=repository[0], profile=profile[0])


class McpEndpoint:
    """One MCP endpoint (a tool family) over ``service``, as an ASGI app.

    Enter :meth:`run` in the application lifespan; the SDK's session manager needs its task
    group. ``max_body`` bounds a request body while it is read (413 beyond it); by default it
    is the largest input bound of the offered tools plus room for the JSON-RPC envelope.
    """

    def __init__(self, service: Service, family: Family, *, max_body: int | None = None) -> None:
        self.service = service
        self.family = family
        self.server = build_server(service, family, scope_principal)
        self.max_body = (
            max_body if max_body is not None else default_max_body(service.registry, family)
        )
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            json_response=True,
            max_request_body_size=self.max_body,
        )
        self.streaming = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            json_response=False,
            max_request_body_size=self.max_body,
        )
        """Answers as an event stream: for a call whose client asked for progress."""

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Run the SDK session managers (once per endpoint, inside the app lifespan)."""
        async with self.manager.run(), self.streaming.run():
            yield

    def _principal(self, bearer: str | None, scope: Scope) -> tuple[Actor, Route | None]:
        route = _route_from_query(scope) if self.family is Family.WORKSPACE else None
        resource = scope.get("state", {}).get(SCOPE_RESOURCE_KEY)
        resource = resource if isinstance(resource, str) else None
        return self.service.authenticate(bearer, resource=resource), route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Authenticate, then hand the request to the SDK's streamable HTTP transport."""
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            # Stateless JSON responses: there is no standalone SSE stream to GET and no session
            # to DELETE, which the MCP transport lets a server answer with 405.
            err = TaskError(ErrorCode.METHOD_NOT_ALLOWED, "MCP over this endpoint is POST only")
            response = error_response(err)
            response.headers["Allow"] = "POST"
            await response(scope, receive, send)
            return
        bearer = bearer_from_header(_header(scope, b"authorization"))
        state: dict[str, Any] = scope.setdefault("state", {})
        try:
            actor, route = await anyio.to_thread.run_sync(self._principal, bearer, scope)
        except TaskError as err:
            name = f"mcp.{self.family.value}"
            await anyio.to_thread.run_sync(self.service.refuse, bearer, name, err)
            response = error_response(err)
            challenge = state.get(SCOPE_CHALLENGE_KEY)
            if response.status_code == 401 and isinstance(challenge, str):
                response.headers["WWW-Authenticate"] = challenge
            await response(scope, receive, send)
            return
        state[SCOPE_ACTOR_KEY] = actor
        state[SCOPE_ROUTE_KEY] = route
        manager = self.streaming if state.get(SCOPE_STREAM_KEY) else self.manager
        await manager.handle_request(scope, receive, send)
