"""The authorization server's HTTP endpoints, on the MCP SDK's ``mcp.server.auth`` handlers.

The SDK's handlers parse and answer the OAuth requests (RFC 8414 metadata, ``/authorize``,
``/token`` with PKCE S256, ``/register`` (RFC 7591), ``/revoke`` (RFC 7009)) and RFC 9728
protected-resource metadata; :class:`TaskOAuthProvider` is the SDK's provider interface over
:class:`taskcore.oauth.server.OAuthServer`, which decides and writes (each step in a worker
thread: the journal is synchronous). Two things the SDK does not do are here:

* a client secret is stored only as its SHA-256, so :class:`HashedSecretAuthenticator`
  compares the presented secret's hash in constant time (the SDK's authenticator compares
  the stored secret itself);
* the issuer is per request (:func:`taskmcp.site.public_base`): ``--public-url``, or the
  loopback origin a local client used. :class:`OAuthEndpoints` builds the handlers of each
  base once.

``/authorize`` sends the person to the board's consent page (``/board/oauth/<request>``);
the board's approval redirects to the client with ``code``, ``state`` and ``iss`` (RFC 9207).
"""

from __future__ import annotations

import base64
import binascii
import functools
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from taskcore import TaskError
from taskcore.limits import OAUTH_CLIENT_METADATA_MAX_BYTES
from taskcore.oauth.server import IssuedTokens, OAuthRefusal, OAuthServer
from taskcore.scopes import SCOPES_SUPPORTED, split_scope

from taskmcp.site import (
    AUTHORIZE_PATH,
    METADATA_PATH,
    PROTECTED_RESOURCE_PATH,
    REGISTER_PATH,
    REVOKE_PATH,
    TOKEN_PATH,
    public_base,
)

__all__ = ["ClientIdFromBasic", "HashedSecretAuthenticator", "OAuthEndpoints", "TaskOAuthProvider"]

Run = Callable[..., Awaitable[Any]]
"""Runs a synchronous function in a worker thread (the HTTP app's pool)."""

_AUTH_METHODS = ["client_secret_post", "client_secret_basic", "none"]
_AUTHORIZE_ERRORS = {
    "invalid_request",
    "unauthorized_client",
    "access_denied",
    "invalid_scope",
    "temporarily_unavailable",
    "invalid_target",
}
_TOKEN_ERRORS = {"invalid_request", "invalid_grant", "invalid_scope", "invalid_target"}
_SITES_MAX = 16


def _client_info(record: Any) -> OAuthClientInformationFull:
    import json

    metadata = json.loads(record.metadata_json)
    metadata.pop("client_secret", None)
    metadata["client_id"] = record.client_id
    if not metadata.get("scope"):
        metadata["scope"] = " ".join(SCOPES_SUPPORTED)
    if record.kind == "metadata":
        metadata["token_endpoint_auth_method"] = "none"  # noqa: S105 - a method name
    return OAuthClientInformationFull.model_validate(metadata)


def _token(issued: IssuedTokens) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        refresh_token=issued.refresh_token,
        expires_in=issued.expires_in,
        scope=issued.scope,
    )


def _token_error(err: TaskError) -> TokenError:
    code = getattr(err, "oauth_error", "invalid_request")
    return TokenError(code if code in _TOKEN_ERRORS else "invalid_request", err.message)  # type: ignore[arg-type]


class TaskOAuthProvider:
    """The SDK's ``OAuthAuthorizationServerProvider`` over :class:`OAuthServer`, for one issuer."""

    def __init__(
        self,
        server: OAuthServer,
        run: Run,
        *,
        issuer: str,
        resources: Sequence[str],
        consent_url: Callable[[str], str],
    ) -> None:
        self.server = server
        self.run = run
        self.issuer = issuer
        self.resources = tuple(resources)
        self.consent_url = consent_url

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client (a metadata document URL is fetched: bounded, public addresses only)."""
        try:
            record = await self.run(self.server.client, client_id)
        except TaskError:
            return None
        return None if record is None else _client_info(record)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Store a registered client (its secret as a hash only)."""
        metadata = client_info.model_dump(mode="json", exclude_none=True)
        try:
            await self.run(
                functools.partial(
                    self.server.register,
                    metadata,
                    client_id=client_info.client_id,
                    secret=client_info.client_secret,
                )
            )
        except TaskError as err:
            raise RegistrationError("invalid_client_metadata", err.message) from None

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Record the request; send the person to the board's consent page."""
        record = await self.run(
            functools.partial(self.server.client, client.client_id, fetch=False)
        )
        if record is None:
            raise AuthorizeError("invalid_request", "the client is not known")
        try:
            request = await self.run(
                functools.partial(
                    self.server.begin,
                    record,
                    redirect_uri=str(params.redirect_uri),
                    explicit=params.redirect_uri_provided_explicitly,
                    scopes=params.scopes,
                    resource=params.resource,
                    resources=self.resources,
                    issuer=self.issuer,
                    code_challenge=params.code_challenge,
                    state=params.state,
                )
            )
        except OAuthRefusal as err:
            code = err.oauth_error if err.oauth_error in _AUTHORIZE_ERRORS else "invalid_request"
            raise AuthorizeError(code, err.message) from None  # type: ignore[arg-type]
        return self.consent_url(request.request_id)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        """The approved request behind a code (the SDK then checks expiry, redirect, PKCE)."""
        record = await self.run(self.server.code, client.client_id, authorization_code)
        if record is None or record.code_expires_at_ms is None:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=list(split_scope(record.scope)),
            expires_at=record.code_expires_at_ms / 1000,
            client_id=record.client_id,
            code_challenge=record.code_challenge,
            redirect_uri=AnyUrl(record.redirect_uri),
            redirect_uri_provided_explicitly=record.redirect_uri_explicit,
            resource=record.resource,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        """Issue the access and refresh token of an approved, PKCE-checked code."""
        try:
            issued = await self.run(
                self.server.exchange_code, client.client_id, authorization_code.code
            )
        except TaskError as err:
            raise _token_error(err) from None
        return _token(issued)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        """A live refresh token of the client (a spent one revokes its family)."""
        found = await self.run(self.server.refresh_token, client.client_id, refresh_token)
        if found is None:
            return None
        record, grant = found
        return RefreshToken(
            token=refresh_token,
            client_id=grant.client_id,
            scopes=list(split_scope(record.scope)),
            expires_at=record.expires_at_ms // 1000,
            resource=grant.resource,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        """Rotate: a new access and refresh token, the old refresh token spent."""
        try:
            issued = await self.run(
                self.server.refresh, client.client_id, refresh_token.token, scopes
            )
        except TaskError as err:
            raise _token_error(err) from None
        return _token(issued)

    async def load_access_token(self, token: str) -> AccessToken | None:
        """An access token (for revocation; the MCP endpoints authenticate through taskcore)."""
        found = await self.run(self.server.access_token, token)
        if found is None:
            return None
        record, grant = found
        return AccessToken(
            token=token,
            client_id=grant.client_id,
            scopes=list(split_scope(record.scope)),
            expires_at=record.expires_at_ms // 1000,
            resource=grant.resource,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """Revoke the token's whole family (RFC 7009)."""
        await self.run(self.server.revoke, token.client_id, token.token)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
        """The SEP-990 grant is not offered."""
        raise TokenError("unsupported_grant_type", "the JWT bearer grant is not supported here")


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's client authentication, against the stored SHA-256 of the secret.

    The secret is read from an ``Authorization: Basic`` header or the form's
    ``client_secret`` (RFC 6749 2.3.1), whichever method the client registered; a client
    registered with a secret must present it, a public one (``none``) nothing. The
    comparison is of hashes, in constant time.
    """

    def __init__(self, provider: TaskOAuthProvider) -> None:
        super().__init__(provider)
        self.task_provider = provider

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        """The authenticated client of a token or revocation request."""
        form = await request.form()
        client_id = form.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("Missing client_id")
        server = self.task_provider.server
        record = await self.task_provider.run(
            functools.partial(server.client, client_id, fetch=False)
        )
        if record is None:
            raise AuthenticationError("Invalid client_id")
        info = _client_info(record)
        method = info.token_endpoint_auth_method or "client_secret_post"
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            raise AuthenticationError(f"Unsupported auth method: {method[:64]}")
        # Either way of sending the secret is accepted (RFC 6749 2.3.1: the server MUST
        # support Basic), whichever the client registered with.
        header = request.headers.get("authorization", "")
        value = form.get("client_secret")
        presented: str | None = value if isinstance(value, str) else None
        if header.startswith("Basic "):
            presented = _basic_secret(header, client_id)
        if method != "none" or record.secret_hash is not None:
            if record.secret_hash is None:
                raise AuthenticationError("the client has no secret to authenticate with")
            if not presented:
                raise AuthenticationError("Client secret is required")
            if not OAuthServer.secret_ok(record, presented):
                raise AuthenticationError("Invalid client_secret")
        return info


def _basic_secret(header: str, client_id: str) -> str:
    if not header.startswith("Basic "):
        raise AuthenticationError("Missing or invalid Basic authentication in Authorization header")
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise AuthenticationError("Invalid Basic authentication header") from None
    user, sep, secret = decoded.partition(":")
    if not sep or unquote(user) != client_id:
        raise AuthenticationError("Client ID mismatch in Basic auth")
    return unquote(secret)


class ClientIdFromBasic:
    """Put the ``client_id`` of an ``Authorization: Basic`` header into a form that lacks it.

    RFC 6749 2.3.1 lets a client that authenticates with HTTP Basic leave ``client_id`` out
    of the form (the TypeScript SDK and Claude Code do); the SDK's token and revocation
    handlers read it from the form only. The body is already bounded by the time it is read.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Rewrite the form when it needs it, then hand the request on."""
        request = Request(scope, receive)
        header = request.headers.get("authorization", "")
        if scope["type"] != "http" or scope["method"] != "POST" or not header.startswith("Basic "):
            await self.app(scope, receive, send)
            return
        body = await request.body()
        form = parse_qsl(body.decode("latin-1"), keep_blank_values=True)
        if not any(key == "client_id" for key, _ in form):
            try:
                decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError, binascii.Error):
                decoded = ""
            user, sep, _ = decoded.partition(":")
            if sep and user:
                form.append(("client_id", unquote(user)))
                body = urlencode(form).encode("ascii")
                scope = dict(scope)
                scope["headers"] = [
                    (k, v) for k, v in scope["headers"] if k.lower() != b"content-length"
                ] + [(b"content-length", str(len(body)).encode("ascii"))]
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class _Site:
    """The handlers of one issuer (base URL), built once."""

    def __init__(
        self,
        server: OAuthServer,
        run: Run,
        base: str,
        resource_paths: Sequence[str],
        consent_path: str,
    ) -> None:
        resources = (base, *(base + p for p in resource_paths))
        provider = TaskOAuthProvider(
            server,
            run,
            issuer=base,
            resources=resources,
            consent_url=lambda request_id: f"{base}{consent_path}/{request_id}",
        )
        authenticator = HashedSecretAuthenticator(provider)
        metadata = OAuthMetadata.model_validate(
            {
                "issuer": base,
                "authorization_endpoint": base + AUTHORIZE_PATH,
                "token_endpoint": base + TOKEN_PATH,
                "registration_endpoint": base + REGISTER_PATH,
                "revocation_endpoint": base + REVOKE_PATH,
                "scopes_supported": list(SCOPES_SUPPORTED),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": _AUTH_METHODS,
                "revocation_endpoint_auth_methods_supported": _AUTH_METHODS,
                "code_challenge_methods_supported": ["S256"],
                "client_id_metadata_document_supported": True,
                "authorization_response_iss_parameter_supported": True,
            }
        )
        registration = ClientRegistrationOptions(
            enabled=True,
            valid_scopes=list(SCOPES_SUPPORTED),
            default_scopes=list(SCOPES_SUPPORTED),
        )
        limit = OAUTH_CLIENT_METADATA_MAX_BYTES

        def bounded(app: ASGIApp) -> ASGIApp:
            return RequestBodyLimitMiddleware(app, limit)

        def cors(handler: Callable[[Request], Awaitable[Response]], methods: list[str]) -> ASGIApp:
            return cors_middleware(handler, methods)

        self.routes: dict[str, tuple[ASGIApp, frozenset[str]]] = {
            METADATA_PATH: (cors(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]), _GET),
            AUTHORIZE_PATH: (
                bounded(request_response(AuthorizationHandler(provider).handle)),
                frozenset({"GET", "POST"}),
            ),
            TOKEN_PATH: (
                bounded(
                    ClientIdFromBasic(
                        cors(TokenHandler(provider, authenticator).handle, ["POST", "OPTIONS"])
                    )
                ),
                _POST,
            ),
            REGISTER_PATH: (
                bounded(
                    cors(RegistrationHandler(provider, registration).handle, ["POST", "OPTIONS"])
                ),
                _POST,
            ),
            REVOKE_PATH: (
                bounded(
                    ClientIdFromBasic(
                        cors(RevocationHandler(provider, authenticator).handle, ["POST", "OPTIONS"])
                    )
                ),
                _POST,
            ),
        }
        for path, resource in zip(("", *resource_paths), resources, strict=True):
            prm = ProtectedResourceMetadata.model_validate(
                {
                    "resource": resource,
                    "authorization_servers": [base],
                    "scopes_supported": list(SCOPES_SUPPORTED),
                    "bearer_methods_supported": ["header"],
                    "resource_name": "agent-task",
                }
            )
            handler = ProtectedResourceMetadataHandler(prm).handle
            self.routes[PROTECTED_RESOURCE_PATH + path] = (cors(handler, ["GET", "OPTIONS"]), _GET)


_GET = frozenset({"GET", "OPTIONS"})
_POST = frozenset({"POST", "OPTIONS"})


class OAuthEndpoints:
    """The OAuth endpoints as one ASGI app; the issuer is each request's public base.

    ``paths()`` lists what to mount. A request whose host has no public base (not a loopback
    name and no ``--public-url``) is answered 404 with what to configure.
    """

    def __init__(
        self,
        server: OAuthServer,
        run: Run,
        *,
        public_url: str | None,
        resource_paths: Sequence[str],
        consent_path: str,
    ) -> None:
        self.server = server
        self.run = run
        self.public_url = public_url
        self.resource_paths = tuple(resource_paths)
        self.consent_path = consent_path
        self._sites: dict[str, _Site] = {}
        self._lock = threading.Lock()

    def paths(self) -> tuple[str, ...]:
        """Every path these endpoints answer."""
        return (
            METADATA_PATH,
            AUTHORIZE_PATH,
            TOKEN_PATH,
            REGISTER_PATH,
            REVOKE_PATH,
            PROTECTED_RESOURCE_PATH,
            *(PROTECTED_RESOURCE_PATH + p for p in self.resource_paths),
        )

    def _site(self, base: str) -> _Site:
        with self._lock:
            site = self._sites.get(base)
            if site is None:
                if len(self._sites) >= _SITES_MAX:
                    self._sites.clear()
                site = self._sites[base] = _Site(
                    self.server, self.run, base, self.resource_paths, self.consent_path
                )
            return site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one OAuth request."""
        base = public_base(scope, self.public_url)
        if base is None:
            response: Response = JSONResponse(
                {
                    "error": "OAuth is offered on loopback hosts and on the server's public URL; "
                    "start the server with --public-url https://<its name>",
                    "code": "NOT_FOUND",
                },
                status_code=404,
            )
            await response(scope, receive, send)
            return
        entry = self._site(base).routes.get(scope["path"])
        if entry is None:
            await JSONResponse({"error": "no such OAuth endpoint", "code": "NOT_FOUND"}, 404)(
                scope, receive, send
            )
            return
        app, methods = entry
        if scope["method"] not in methods:
            allowed = ", ".join(sorted(methods))
            await JSONResponse(
                {
                    "error": f"{scope['method'][:16]} is not allowed here",
                    "code": "METHOD_NOT_ALLOWED",
                },
                405,
                headers={"Allow": allowed},
            )(scope, receive, send)
            return
        await app(scope, receive, send)
