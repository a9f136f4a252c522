"""The Starlette application: routes generated from the taskcore registry, no logic of its own.

=====================================================================  ========================
route                                                                  what
=====================================================================  ========================
``POST /v/{verb}``                                                     every queue and admin op
``POST /v1/hub/workspace/repositories/{repository}/profiles/{profile}``
``     /agent-tasks``                                                  workflow envelope
``POST .../agent-tasks/collector-upload``                              raw signed transfer
``POST /mcp``                                                          MCP: queue tools
``POST /v1/hub/workspace/mcp?repository=R&profile=P``                  MCP: workflow tools
``GET /v1/hub/health`` (also ``/health``, ``/healthz``)                storage ping, backend, schema
``GET /v1/events``                                                     the event stream (SSE)
``GET /openapi.json``                                                  every route and body
=====================================================================  ========================

Each handler reads the transport (media type, route, declared length, bearer token), asks
:meth:`taskcore.Service.admit` whether the request may proceed (authentication, rate limits,
and for a known operation its tier and autonomy) *before reading a byte of body*, then reads
the bounded body against the application's :class:`~taskhttp.limits.BodyBudget`, hands the
bytes to :class:`taskcore.Service` in a worker thread and writes back the bytes it returns,
or ``{error, code}`` with the status of the error's kind (and ``Retry-After`` /
``WWW-Authenticate`` as the error asks). Transport refusals (415, 413, a malformed route) are
audited through :meth:`taskcore.Service.refuse`; unknown URLs and wrong methods answer
``{error, code}`` too, and an unexpected exception is ``INTERNAL`` (500) without a traceback
in the body. The MCP endpoints get the same admission and budget, and their JSON-RPC body is
parsed once strictly (:func:`taskcore.codec.parse_json`: duplicate keys, non-finite numbers,
lone surrogates, depth) before the MCP SDK, which is lenient about all of these, sees it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import anyio
import anyio.abc
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from taskboard import BOARD_PATH, create_board
from taskcore import Actor, Door, ErrorCode, Service, TaskError
from taskcore import Response as TaskResponse
from taskcore import Route as TaskRoute
from taskcore.auth import bearer_from_header
from taskcore.codec import dumps, parse_json
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES, JSON_MAX_DEPTH, REQUEST_BODY_MAX_BYTES
from taskcore.oauth_tokens import is_access_token
from taskcore.service import WORKFLOW_PREFIX, Surface
from taskcore.waiting import WaitingCall, wait_async
from taskmcp.family import (
    SCOPE_CHALLENGE_KEY,
    SCOPE_RESOURCE_KEY,
    SCOPE_STREAM_KEY,
    Family,
    error_response,
    max_body,
    wants_stream,
)
from taskmcp.jsonrpc import INVALID_REQUEST, PARSE_ERROR, invalid, message_id
from taskmcp.jsonrpc import error_response as rpc_error_response
from taskmcp.site import AS_PATHS, PROTECTED_RESOURCE_PATH, check_site, public_base

from taskhttp.body import JSON, OCTET_STREAM, declared_length, read_body, require_media_type
from taskhttp.events import EVENTS_PATH, EventsEndpoint
from taskhttp.limits import BodyBudget, Reservation, TransportLimits
from taskhttp.metrics import METRICS_PATH, Metrics
from taskhttp.oauth import LazyOAuth, challenge, challenged, step_up
from taskhttp.openapi import (
    HEALTH_ALIASES,
    HEALTH_PATH,
    MCP_PATH,
    OPENAPI_PATH,
    VERB_SURFACES,
    WORKSPACE_MCP_PATH,
    openapi_document,
)
from taskhttp.requestlog import RequestLogMiddleware
from taskhttp.threads import WorkerPool

if TYPE_CHECKING:
    from taskmcp.http import McpEndpoint

__all__ = ["UPLOAD_OPERATION", "LazyMcp", "create_app"]

UPLOAD_OPERATION = "collector_upload"
"""The workflow operation the collector upload route dispatches (raw bytes in)."""

_REPOSITORIES = "/v1/hub/workspace/repositories/"


def _ok(body: bytes) -> Response:
    return Response(body, media_type=JSON)


def _parse_route(request: Request) -> tuple[TaskRoute, bool]:
    """Return the route and whether it is the upload route, from the undecoded path.

    The raw path is split before percent-decoding, so ``owner%2Fname`` names the repository
    ``owner/name``; ``owner/name`` spelled with a plain slash works too.
    """
    raw = request.scope.get("raw_path") or request.scope["path"].encode("latin-1")
    text = bytes(raw).split(b"?", 1)[0].decode("latin-1")
    segments = [unquote(part) for part in text[len(_REPOSITORIES) :].split("/")]
    upload = segments[-1:] == ["collector-upload"]
    if upload:
        segments = segments[:-1]
    if len(segments) < 4 or segments[-1] != "agent-tasks" or segments[-3] != "profiles":
        raise TaskError(
            ErrorCode.NOT_FOUND,
            "use /v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks",
        )
    return TaskRoute(repository="/".join(segments[:-3]), profile=segments[-2]), upload


def _client(scope: Scope) -> str | None:
    """The peer address of the connection (rate limits key on it; no proxy headers)."""
    client = scope.get("client")
    return str(client[0]) if client else None


class LazyMcp:
    """The two MCP endpoints, built on the first request to either.

    The ``mcp`` SDK costs about 0.6 s of imports (most of what ``agent-task serve`` spends
    before it listens; docs/performance.md), and a service that no MCP client talks to never
    needs it. The first MCP request imports it in a worker thread, builds both endpoints and
    runs their session managers in a task of the application's lifespan, then every request
    goes to the running endpoint. Everything before that (admission, the body bound, the
    strict parse) needs only :mod:`taskmcp.family`.
    """

    def __init__(self, service: Service, pool: WorkerPool) -> None:
        self.service = service
        self.pool = pool
        self._endpoints: dict[Family, McpEndpoint] | None = None
        self._lock = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """The lifespan's part: a task group the endpoints' session managers run in."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def endpoint(self, family: Family) -> McpEndpoint:
        """The running endpoint of ``family`` (built and started on first use)."""
        if self._endpoints is None:
            async with self._lock:
                if self._endpoints is None:
                    self._endpoints = await self._start()
        return self._endpoints[family]

    async def _start(self) -> dict[Family, McpEndpoint]:
        if self._group is None:
            raise TaskError(ErrorCode.BUSY, "the server is starting or stopping; retry")
        http = await self.pool.run(importlib.import_module, "taskmcp.http")
        endpoints: dict[Family, McpEndpoint] = {
            family: http.McpEndpoint(self.service, family) for family in Family
        }
        started = anyio.Event()
        failed: list[Exception] = []

        async def serve() -> None:
            try:
                async with contextlib.AsyncExitStack() as stack:
                    for endpoint in endpoints.values():
                        await stack.enter_async_context(endpoint.run())
                    started.set()
                    await anyio.sleep_forever()
            except Exception as exc:
                failed.append(exc)
                started.set()

        self._group.start_soon(serve)
        await started.wait()
        if failed:
            raise TaskError(
                ErrorCode.INTERNAL, "the MCP endpoints could not start; see the server log"
            ) from failed[0]
        return endpoints


class _SiteGuard:
    """Refuse a request whose ``Host`` or ``Origin`` is not this server's (DNS rebinding).

    :func:`taskmcp.site.check_site` decides; the answer is the ``{error, code}`` body with
    403 (``HOST_NOT_ALLOWED`` / ``ORIGIN_NOT_ALLOWED``). In front of the board.
    """

    def __init__(self, app: ASGIApp, public_url: str | None) -> None:
        self.app = app
        self.public_url = public_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = check_site(scope, self.public_url) if scope["type"] == "http" else None
        if refusal is not None:
            await error_response(refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class _AdmittedMcp:
    """An MCP endpoint behind the same admission, body budget and strict parse as the rest."""

    def __init__(
        self,
        service: Service,
        mcp: LazyMcp,
        family: Family,
        budget: BodyBudget,
        pool: WorkerPool,
        *,
        path: str,
        public_url: str | None = None,
    ) -> None:
        self.service = service
        self.mcp = mcp
        self.family = family
        self.path = path
        self.public_url = public_url
        self.max_body = max_body(service.registry, family)
        self.budget = budget
        self.pool = pool
        self.name = f"mcp.{family.value}"

    async def refuse(
        self, bearer: str | None, err: TaskError, scope: Scope, receive: Receive, send: Send
    ) -> None:
        await self.pool.run(self.service.refuse, bearer, self.name, err)
        await error_response(err)(scope, receive, send)

    async def refuse_rpc(
        self,
        bearer: str | None,
        code: int,
        err: TaskError,
        request_id: str | int | None,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """Audit ``err`` and answer it as the JSON-RPC error ``code`` (HTTP 400)."""
        await self.pool.run(self.service.refuse, bearer, self.name, err)
        await rpc_error_response(code, err, request_id)(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # DNS rebinding: a Host or Origin that is not this server's, before anything else.
            site = check_site(scope, self.public_url)
            if site is not None:
                bearer = bearer_from_header(Request(scope).headers.get("authorization"))
                await self.refuse(bearer, site, scope, receive, send)
                return
        if scope["type"] != "http" or scope["method"] != "POST":
            endpoint = await self.mcp.endpoint(self.family)
            await endpoint(scope, receive, send)  # 405 for GET/DELETE
            return
        request = Request(scope, receive)
        bearer = bearer_from_header(request.headers.get("authorization"))
        base = public_base(scope, self.public_url)
        try:
            declared_length(request, self.max_body)
        except TaskError as err:
            await self.refuse(bearer, err, scope, receive, send)
            return
        # An OAuth access token is admitted at the resource it was issued for (RFC 8707),
        # so it is never admitted from memory (which keys on the bearer alone).
        oauth = is_access_token(bearer)
        actor = None if oauth else self.service.admit_recent(bearer, None, door=Door.MCP)
        if actor is None:
            try:
                actor = await self.pool.run(
                    functools.partial(
                        self.service.admit,
                        bearer,
                        client=_client(scope),
                        door=Door.MCP,
                        label=self.name,
                        resource=base + self.path if oauth and base else None,
                    )
                )
            except TaskError as err:
                await challenged(err, base=base, path=self.path, bearer=bearer)(
                    scope, receive, send
                )
                return
        async with self.budget.hold() as held:
            try:
                body = await read_body(request, self.max_body, held)
            except TaskError as err:
                await self.refuse(bearer, err, scope, receive, send)
                return
            try:
                # The SDK accepts NaN, Infinity, 1e400 and duplicate keys (the last wins);
                # the JSON-RPC envelope adds two levels above the tool arguments.
                message = parse_json(body, max_bytes=self.max_body, max_depth=JSON_MAX_DEPTH + 2)
            except TaskError as err:
                await self.refuse_rpc(bearer, PARSE_ERROR, err, None, scope, receive, send)
                return
            refusal = invalid(message)
            if refusal is not None:
                request_id = message_id(message)
                await self.refuse_rpc(
                    bearer, INVALID_REQUEST, refusal, request_id, scope, receive, send
                )
                return
            stepped = step_up(
                self.service, self.family, bearer, actor, message, base=base, path=self.path
            )
            if stepped is not None:
                response, refusal = stepped
                await self.pool.run(self.service.refuse, bearer, self.name, refusal)
                await response(scope, receive, send)
                return
            if wants_stream(message, request.headers.get("accept")):
                scope.setdefault("state", {})[SCOPE_STREAM_KEY] = True
            endpoint = await self.mcp.endpoint(self.family)
            # RFC 9110 5.5: a field value excludes the whitespace around it; llhttp keeps
            # trailing whitespace, and the SDK compares Mcp-Method / Mcp-Name values exactly.
            scope["headers"] = [(k, bytes(v).strip(b" \t")) for k, v in scope["headers"]]
            state: dict[str, Any] = scope.setdefault("state", {})
            # The endpoint authenticates the bearer again (a revocation since is a 401): at
            # this resource, and with the same challenge.
            if oauth and base:
                state[SCOPE_RESOURCE_KEY] = base + self.path
            state[SCOPE_CHALLENGE_KEY] = challenge(base, self.path)
            await endpoint(scope, _replay(body, receive), send)


class _Verb:
    """``POST /v/{verb}`` as a bare ASGI endpoint.

    Starlette wraps a function endpoint in a request/response adapter and a second exception
    wrapper per request; the errors this endpoint does not answer itself reach the same
    handlers through the application's own middleware, so it needs neither.
    """

    def __init__(self, service: Service, budget: BodyBudget, pool: WorkerPool) -> None:
        self.service = service
        self.budget = budget
        self.pool = pool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.respond(Request(scope, receive), scope)
        await response(scope, receive, send)

    async def respond(self, request: Request, scope: Scope) -> Response:
        service = self.service
        name = str(scope["path_params"]["verb"])
        bearer = bearer_from_header(request.headers.get("authorization"))
        try:
            require_media_type(request, JSON)
            op = service.registry.get(name)
            limit = op.max_input_bytes if op is not None else REQUEST_BODY_MAX_BYTES
            declared_length(request, limit)
        except TaskError as err:
            await self.pool.run(service.refuse, bearer, name, err)
            return error_response(err)
        # A bearer admitted moments ago is admitted again without a storage read or a hop.
        actor = service.admit_recent(bearer, name, door=Door.HTTP, surfaces=VERB_SURFACES)
        if actor is None:
            try:
                actor = await self.pool.run(
                    service.admit,
                    bearer,
                    name,
                    client=_client(scope),
                    door=Door.HTTP,
                    surfaces=VERB_SURFACES,
                )
            except TaskError as err:
                return error_response(err)
        held = Reservation(self.budget)  # what ``budget.hold()`` does, without a generator
        try:
            try:
                body = await read_body(request, limit, held)
            except TaskError as err:
                await self.pool.run(service.refuse, bearer, name, err)
                return error_response(err)
            if op is not None and op.waits:
                held.release()  # a waiting call holds no share of the body budget
                return await self.waiting(request, bearer, name, body, actor)
            try:
                result = await self.pool.run(
                    service.call,
                    bearer,
                    name,
                    body,
                    door=Door.HTTP,
                    surfaces=VERB_SURFACES,
                    admitted=actor,  # authenticated again in the call's own transaction
                    traceparent=request.headers.get("traceparent"),
                )
            except TaskError as err:
                return error_response(err)
        finally:
            held.release()
        return _ok(result.body)

    async def waiting(
        self, request: Request, bearer: str | None, name: str, body: bytes, actor: Actor
    ) -> Response:
        """A call that may wait (``claimNext`` with ``waitMs``), holding no thread meanwhile.

        Each attempt runs in a worker thread, the waits on the event loop
        (:func:`taskcore.waiting.wait_async`); a client that disconnects ends the wait, and
        the last attempt takes nothing.
        """
        service = self.service

        def attempt(waiting: WaitingCall) -> Awaitable[TaskResponse]:
            return self.pool.run(
                service.call,
                bearer,
                name,
                body,
                door=Door.HTTP,
                surfaces=VERB_SURFACES,
                admitted=actor,
                waiting=waiting,
            )

        try:
            result = await wait_async(
                service,
                attempt,
                gone=lambda: _disconnected(request.receive),
            )
        except TaskError as err:
            return error_response(err)
        return _ok(result.body)


async def _disconnected(receive: Receive) -> None:
    """Return when the client closes the connection (its request body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class _App(Starlette):
    """The application: Starlette, with a straight lane for ``POST /v/{verb}``.

    The queue's verbs are the hot path: Starlette would take each through its server-error
    middleware, the request log, its exception middleware and a match against every route.
    The lane gives them the request log and the same last-resort handling (an exception an
    endpoint did not answer is the ``INTERNAL`` JSON answer, then re-raised for the server
    to log, as Starlette's server-error middleware does) and calls the endpoint directly.
    Every other request, and a verb path the route would not match, goes through Starlette.
    """

    def __init__(
        self,
        *,
        verb: ASGIApp,
        log_format: str,
        on_error: Callable[[Request, Exception], Awaitable[Response]],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._lane = RequestLogMiddleware(_LastResort(verb, on_error), fmt=log_format)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            path: str = scope["path"]
            name = path[3:]
            if path.startswith("/v/") and name and "/" not in name:
                scope["app"] = self
                scope["path_params"] = {"verb": name}
                await self._lane(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


class _LastResort:
    """Answer an exception ``app`` raised before it answered, with ``on_error``; re-raise."""

    def __init__(
        self, app: ASGIApp, on_error: Callable[[Request, Exception], Awaitable[Response]]
    ) -> None:
        self.app = app
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if not started:
                response = await self.on_error(Request(scope), exc)
                await response(scope, receive, send)
            raise


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands over ``body`` once, then waits on the real connection."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def create_app(
    service: Service,
    *,
    routes: Sequence[BaseRoute] = (),
    log_format: str = "text",
    board_secure: bool | None = None,
    limits: TransportLimits | None = None,
    public_url: str | None = None,
    oauth_allow_private_client_urls: bool = False,
) -> Starlette:
    """Build the HTTP application over ``service``.

    ``routes`` are extra routes mounted beside the service's own (the benchmark's echo
    baseline). ``limits`` bound the request body bytes held at once (the server applies the
    rest of them, see :func:`taskhttp.serve`). ``log_format`` (``text`` or ``json``) shapes
    the one log line per request; ``board_secure`` forces the board's ``Secure`` cookies
    (``None``: when over TLS). ``public_url`` is where clients reach this server
    (``https://host``; :func:`taskmcp.site.public_base`): the OAuth issuer and the MCP
    resources are named from it; without it OAuth is offered on loopback hosts only.
    ``oauth_allow_private_client_urls`` lets client ID metadata documents be fetched from
    private addresses. The caller owns ``service`` and closes it after the server stops.
    """
    transport = limits or TransportLimits()
    budget = BodyBudget(transport.body_bytes_in_flight)
    openapi_cache: dict[tuple[int, str], bytes] = {}
    pool = WorkerPool()  # the journal is synchronous: keep the event loop free while it works
    mcp = LazyMcp(service, pool)
    oauth = LazyOAuth(
        service,
        pool,
        public_url=public_url,
        resource_paths=(MCP_PATH, WORKSPACE_MCP_PATH),
        consent_path=BOARD_PATH + "/oauth",
        allow_private_client_urls=oauth_allow_private_client_urls,
    )
    mcp_door = functools.partial(_AdmittedMcp, service, mcp, budget=budget, pool=pool)

    async def refuse(bearer: str | None, name: str, err: TaskError) -> Response:
        await pool.run(service.refuse, bearer, name, err)
        return error_response(err)

    async def workflow(request: Request) -> Response:
        bearer = bearer_from_header(request.headers.get("authorization"))
        name = "workflow"
        try:
            route, upload = _parse_route(request)
            if upload:
                name = WORKFLOW_PREFIX + UPLOAD_OPERATION
                require_media_type(request, OCTET_STREAM)
                op = service.registry.get(name)
                limit = op.max_input_bytes if op is not None else COLLECTOR_ENVELOPE_MAX_BYTES
            else:
                require_media_type(request, JSON)
                limit = REQUEST_BODY_MAX_BYTES
            declared_length(request, limit)
        except TaskError as err:
            return await refuse(bearer, name, err)
        try:
            await pool.run(
                service.admit,
                bearer,
                name if upload else None,
                client=_client(request.scope),
                route=route,
                door=Door.HTTP,
                surfaces=(Surface.WORKFLOW,),
                label=name,
            )
        except TaskError as err:
            return error_response(err)
        async with budget.hold() as held:
            try:
                body = await read_body(request, limit, held)
            except TaskError as err:
                return await refuse(bearer, name, err)
            return await run_workflow(
                bearer, body, route, upload, request.headers.get("traceparent")
            )

    async def run_workflow(
        bearer: str | None,
        body: bytes,
        route: TaskRoute,
        upload: bool,
        traceparent: str | None,
    ) -> Response:
        try:
            result = await pool.run(
                service.call_workflow,
                bearer,
                body,
                route=route,
                door=Door.HTTP,
                operation=UPLOAD_OPERATION if upload else None,
                traceparent=traceparent,
            )
        except TaskError as err:
            return error_response(err)
        return _ok(result.body)

    async def health(request: Request) -> Response:
        try:
            answer = await pool.run(service.health)
        except TaskError as err:
            return error_response(err)
        return JSONResponse(answer)

    async def openapi(request: Request) -> Response:
        base = str(request.base_url).rstrip("/")[:512]
        key = (len(service.registry), base)
        if key not in openapi_cache:
            openapi_cache.clear()
            openapi_cache[key] = dumps(openapi_document(service.registry, server_url=base))
        return _ok(openapi_cache[key])

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        headers: dict[str, str] = {}
        if status == 404:
            err = TaskError(
                ErrorCode.NOT_FOUND,
                f"there is no route {request.url.path[:128]!r}; see GET {OPENAPI_PATH}",
            )
        elif status == 405:
            err = TaskError(
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{request.method[:16]} is not allowed on {request.url.path[:128]!r}",
            )
            if isinstance(exc, HTTPException) and exc.headers:
                headers = dict(exc.headers)
        elif status < 500:
            err = TaskError(ErrorCode.BAD_INPUT, "the request could not be read")
        else:
            err = TaskError(ErrorCode.INTERNAL, "internal error; the request was not applied")
        response = error_response(err)
        response.headers.update(headers)
        return response

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with mcp.run():
                yield
        finally:
            pool.close()

    verb = _Verb(service, budget, pool)
    table: list[BaseRoute] = [
        Route("/v/{verb}", verb, methods=["POST"]),
        Route(_REPOSITORIES + "{rest:path}", workflow, methods=["POST"]),
        Route(MCP_PATH, mcp_door(Family.QUEUE, path=MCP_PATH, public_url=public_url)),
        Route(
            WORKSPACE_MCP_PATH,
            mcp_door(Family.WORKSPACE, path=WORKSPACE_MCP_PATH, public_url=public_url),
        ),
        *(
            Route(path, oauth)
            for path in (
                *AS_PATHS,
                PROTECTED_RESOURCE_PATH,
                PROTECTED_RESOURCE_PATH + MCP_PATH,
                PROTECTED_RESOURCE_PATH + WORKSPACE_MCP_PATH,
            )
        ),
        *(Route(path, health, methods=["GET"]) for path in (HEALTH_PATH, *HEALTH_ALIASES)),
        Route(
            EVENTS_PATH,
            EventsEndpoint(service, pool, write_timeout=transport.events_write_timeout),
            methods=["GET"],
        ),
        Route(OPENAPI_PATH, openapi, methods=["GET"]),
        Route(METRICS_PATH, Metrics(service).endpoint, methods=["GET"]),
        Mount(BOARD_PATH, app=_SiteGuard(create_board(service, secure=board_secure), public_url)),
        *routes,
    ]
    return _App(
        verb=verb,
        log_format=log_format,
        on_error=http_error,
        routes=table,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, Exception: http_error},
        middleware=[Middleware(RequestLogMiddleware, fmt=log_format)],
    )
