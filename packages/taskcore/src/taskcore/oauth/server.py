"""The authorization server's protocol steps: one transaction and one audit event each.

:class:`OAuthServer` is what the HTTP adapter's OAuth endpoints call (through the MCP SDK's
``mcp.server.auth`` handlers, which parse the requests, check PKCE S256 and answer in the
OAuth wire format). Every step that writes is one write transaction of the service with its
audit event in it (``oauth.register``, ``oauth.client_metadata``, ``oauth.authorize``,
``oauth.token.issue``, ``oauth.token.refresh``, ``oauth.token.revoke``, ``oauth.token.reuse``);
the consent itself is a registry operation (:mod:`taskcore.oauth.operations`).

* Codes are single use: a second exchange of one code revokes the grant it produced
  (RFC 6749 4.1.2).
* Refresh tokens rotate: each exchange issues a new one and marks the old one used; a used
  one presented again is reuse, and reuse revokes the whole family (the grant and every
  token of it; OAuth 2.1 4.3.1, RFC 9700 4.14.2).
* Revocation (RFC 7009) of an access or a refresh token revokes the family too.

Errors are :class:`OAuthRefusal`: a :class:`~taskcore.TaskError` that also names the OAuth
error code the endpoint answers with.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import attrs

from taskcore.actors import Actor, Tier
from taskcore.audit import ANONYMOUS, input_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    OAUTH_ACCESS_TOKEN_MS,
    OAUTH_CLIENT_METADATA_MAX_BYTES,
    OAUTH_CLIENT_METADATA_REFRESH_MS,
    OAUTH_CLIENTS_MAX,
    OAUTH_CODE_MS,
    OAUTH_PENDING_REQUESTS_MAX,
    OAUTH_REFRESH_TOKEN_MS,
    OAUTH_REQUEST_MS,
    OAUTH_TEXT_MAX_CHARS,
)
from taskcore.oauth.cimd import fetch_metadata_document, is_metadata_url
from taskcore.oauth_tokens import (
    ACCESS_PREFIX,
    CODE_PREFIX,
    REFRESH_PREFIX,
    hash_secret,
    matches,
    new_grant_id,
    new_secret,
    parse_secret,
)
from taskcore.scopes import DEFAULT_SCOPES, SCOPES_SUPPORTED, cap, scopes_for, split_scope
from taskcore.service import Service
from taskcore.store.oauth_api import (
    OAuthClientRecord,
    OAuthGrantRecord,
    OAuthRequestRecord,
    OAuthTokenRecord,
)
from taskcore.store.storage import Transaction

__all__ = ["IssuedTokens", "OAuthRefusal", "OAuthServer", "decide_in", "redirect_with"]

_DAY_MS = 24 * 60 * 60 * 1000


class OAuthRefusal(TaskError):  # noqa: N818 - a TaskError, named for what it is
    """A refusal of an OAuth step: a typed error and the OAuth ``error`` to answer with."""

    def __init__(self, code: ErrorCode, oauth_error: str, message: str) -> None:
        super().__init__(code, message)
        self.oauth_error = oauth_error


@attrs.frozen(kw_only=True)
class IssuedTokens:
    """What the token endpoint answers: the secrets (shown once) and their lifetime."""

    access_token: str = attrs.field(repr=False)
    refresh_token: str = attrs.field(repr=False)
    expires_in: int
    scope: str
    grant_id: str


def redirect_with(uri: str, **params: str | None) -> str:
    """``uri`` with ``params`` added to its query (its own query kept; ``None`` left out).

    >>> redirect_with("http://127.0.0.1:9/cb?x=1", code="c", state=None, iss="https://a")
    'http://127.0.0.1:9/cb?x=1&code=c&iss=https%3A%2F%2Fa'
    """
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query.extend((k, v) for k, v in params.items() if v is not None)
    return urlunsplit(parts._replace(query=urlencode(query)))


def _client_name(metadata: Mapping[str, Any], client_id: str) -> str:
    name = metadata.get("client_name")
    text = name if isinstance(name, str) and name.strip() else client_id
    return " ".join(text.split())[:128]


def _text(value: str | None, what: str) -> None:
    if value is not None and len(value) > OAUTH_TEXT_MAX_CHARS:
        raise OAuthRefusal(
            ErrorCode.OUT_OF_BOUNDS,
            "invalid_request",
            f"{what} is over {OAUTH_TEXT_MAX_CHARS} characters",
        )


class OAuthServer:
    """The authorization server over one :class:`~taskcore.Service` (its journal and audit).

    ``allow_private_client_urls`` lets client ID metadata documents be fetched from private
    addresses (a server and its clients on one private network); ``fetch`` is the fetcher
    (:func:`taskcore.oauth.cimd.fetch_metadata_document`).
    """

    def __init__(
        self,
        service: Service,
        *,
        allow_private_client_urls: bool = False,
        fetch: Callable[..., dict[str, Any]] = fetch_metadata_document,
    ) -> None:
        self.service = service
        self.allow_private_client_urls = allow_private_client_urls
        self._fetch = fetch

    @property
    def now_ms(self) -> int:
        """The service clock."""
        return self.service.clock.now_ms()

    def _audit(
        self, tx: Transaction, actor: str, workspace: str, name: str, raw: Any, outcome: str = "OK"
    ) -> None:
        self.service.audit.record(tx, actor, workspace, name, input_digest(raw), outcome)

    def _refused(self, name: str, raw: Any, error: TaskError, actor: str = ANONYMOUS) -> None:
        self.service.audit.refusal(actor, "", name, input_digest(raw), error)

    # -- clients -----------------------------------------------------------------------------
    def client(self, client_id: str, *, fetch: bool = True) -> OAuthClientRecord | None:
        """The client ``client_id`` (``None`` for an unknown registered id).

        A metadata document URL is fetched when not yet known or (with ``fetch``) when the
        copy is older than an hour.
        """
        if not isinstance(client_id, str) or not client_id or len(client_id) > OAUTH_TEXT_MAX_CHARS:
            return None
        with self.service.storage.read() as tx:
            record = tx.oauth.get_client(client_id)
        if not is_metadata_url(client_id):
            return record
        stale = (
            record is None
            or self.now_ms - record.refreshed_at_ms > OAUTH_CLIENT_METADATA_REFRESH_MS
        )
        if not stale or (record is not None and not fetch):
            return record
        raw = {"client_id": client_id}
        try:
            document = self._fetch(client_id, allow_private=self.allow_private_client_urls)
        except TaskError as err:
            self._refused("oauth.client_metadata", raw, err)
            if record is not None:
                return record  # the last good document stands while the host is away
            raise OAuthRefusal(err.code, "invalid_request", err.message) from None
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        now = self.now_ms
        fresh = OAuthClientRecord(
            client_id=client_id,
            kind="metadata",
            name=_client_name(document, client_id),
            metadata_json=text,
            secret_hash=None,
            created_at_ms=record.created_at_ms if record is not None else now,
            refreshed_at_ms=now,
        )
        with self.service.write() as tx:
            if tx.oauth.get_client(client_id) is None:
                self._make_room(tx, now)
                tx.oauth.insert_client(fresh)
            else:
                tx.oauth.replace_client(fresh)
            self._audit(tx, ANONYMOUS, "", "oauth.client_metadata", raw)
        return fresh

    def _make_room(self, tx: Transaction, now: int) -> None:
        if tx.oauth.count_clients() >= OAUTH_CLIENTS_MAX:
            tx.oauth.drop_unused_clients(now - _DAY_MS)
            if tx.oauth.count_clients() >= OAUTH_CLIENTS_MAX:
                raise OAuthRefusal(
                    ErrorCode.OVERLOADED,
                    "temporarily_unavailable",
                    f"this server holds {OAUTH_CLIENTS_MAX} OAuth clients; try again tomorrow "
                    "or ask the operator to revoke unused ones",
                )

    def register(
        self, metadata: Mapping[str, Any], *, client_id: str, secret: str | None
    ) -> OAuthClientRecord:
        """Register a client (RFC 7591): store its metadata and the hash of its secret."""
        text = json.dumps(
            {k: v for k, v in metadata.items() if k not in ("client_secret",)},
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=True,
            default=str,
        )
        raw = {"client_name": metadata.get("client_name"), "client_id": client_id}
        if len(text.encode()) > OAUTH_CLIENT_METADATA_MAX_BYTES:
            err = OAuthRefusal(
                ErrorCode.PAYLOAD_TOO_LARGE,
                "invalid_client_metadata",
                f"client metadata is over {OAUTH_CLIENT_METADATA_MAX_BYTES} bytes",
            )
            self._refused("oauth.register", raw, err)
            raise err
        now = self.now_ms
        record = OAuthClientRecord(
            client_id=client_id,
            kind="registered",
            name=_client_name(metadata, client_id),
            metadata_json=text,
            secret_hash=None if secret is None else hash_secret(secret),
            created_at_ms=now,
            refreshed_at_ms=now,
        )
        try:
            with self.service.write() as tx:
                self._make_room(tx, now)
                tx.oauth.insert_client(record)
                self._audit(tx, ANONYMOUS, "", "oauth.register", raw)
        except TaskError as err:
            self._refused("oauth.register", raw, err)
            raise
        return record

    @staticmethod
    def secret_ok(record: OAuthClientRecord, presented: str | None) -> bool:
        """Whether ``presented`` is the client's secret (hashes compared in constant time)."""
        return presented is not None and matches(record.secret_hash, presented)

    # -- authorization requests --------------------------------------------------------------
    def begin(
        self,
        client: OAuthClientRecord,
        *,
        redirect_uri: str,
        explicit: bool,
        scopes: Sequence[str] | None,
        resource: str | None,
        resources: Sequence[str],
        issuer: str,
        code_challenge: str,
        state: str | None,
    ) -> OAuthRequestRecord:
        """Record an authorization request waiting for consent; return it.

        ``resources`` are the protected resources of this server (the first is the default
        for a request without ``resource``); any other is ``invalid_target``.
        """
        raw = {"client_id": client.client_id, "redirect_uri": redirect_uri, "resource": resource}
        try:
            for value, what in (
                (redirect_uri, "redirect_uri"),
                (state, "state"),
                (resource, "resource"),
            ):
                _text(value, what)
            wanted = split_scope(" ".join(scopes)) if scopes else DEFAULT_SCOPES
            unknown = [s for s in wanted if s not in SCOPES_SUPPORTED]
            if unknown or cap(wanted) is None:
                raise OAuthRefusal(
                    ErrorCode.INVALID_VALUE,
                    "invalid_scope",
                    f"scope must include one of {', '.join(SCOPES_SUPPORTED[:4])}; unknown: "
                    f"{' '.join(unknown)[:256] or 'none'}",
                )
            target = resource if resource is not None else resources[0]
            if target.rstrip("/") not in {r.rstrip("/") for r in resources}:
                raise OAuthRefusal(
                    ErrorCode.INVALID_VALUE,
                    "invalid_target",
                    f"resource {target[:256]!r} is not served here; use one of "
                    f"{', '.join(resources)}",
                )
            now = self.now_ms
            record = OAuthRequestRecord(
                request_id="oar_" + secrets.token_hex(16),
                client_id=client.client_id,
                client_name=client.name,
                redirect_uri=redirect_uri,
                redirect_uri_explicit=explicit,
                scope=" ".join(wanted),
                resource=target,
                issuer=issuer,
                code_challenge=code_challenge[:256],
                state=state,
                created_at_ms=now,
                expires_at_ms=now + OAUTH_REQUEST_MS,
                status="pending",
            )
            with self.service.write() as tx:
                tx.oauth.prune_requests(now - _DAY_MS)
                if tx.oauth.count_pending(now) >= OAUTH_PENDING_REQUESTS_MAX:
                    raise OAuthRefusal(
                        ErrorCode.OVERLOADED,
                        "temporarily_unavailable",
                        f"{OAUTH_PENDING_REQUESTS_MAX} authorization requests are waiting "
                        "for consent; try again later",
                    )
                tx.oauth.insert_request(record)
                self._audit(tx, ANONYMOUS, "", "oauth.authorize", raw)
        except TaskError as err:
            self._refused("oauth.authorize", raw, err)
            raise
        return record

    # -- the token endpoint ------------------------------------------------------------------
    def code(self, client_id: str, code: str) -> OAuthRequestRecord | None:
        """The approved request a code belongs to (for the SDK's checks), else ``None``.

        A code presented again after its exchange revokes what it produced (RFC 6749 4.1.2).
        """
        parsed = parse_secret(code, CODE_PREFIX)
        with self.service.storage.read() as tx:
            record = tx.oauth.request_by_code(parsed[0]) if parsed else None
        if parsed is None or record is None or not matches(record.code_hash, parsed[1]):
            self._refused("oauth.token.issue", {"client_id": client_id}, _invalid_grant("code"))
            return None
        if record.client_id != client_id:
            return None
        if record.status == "used":
            self._reuse(record.grant_id, "authorization code used twice")
            return None
        return record if record.status == "approved" else None

    def exchange_code(self, client_id: str, code: str) -> IssuedTokens:
        """Exchange an approved code (PKCE already checked) for an access and refresh token."""
        parsed = parse_secret(code, CODE_PREFIX)
        if parsed is None:
            raise _invalid_grant("code")
        now = self.now_ms
        reused: str | None = None
        with self.service.write() as tx:
            request = tx.oauth.request_by_code(parsed[0])
            if (
                request is None
                or request.client_id != client_id
                or request.grant_id is None
                or not matches(request.code_hash, parsed[1])
            ):
                raise _invalid_grant("code")
            if request.code_expires_at_ms is not None and request.code_expires_at_ms <= now:
                raise _invalid_grant("code", "expired")
            used = attrs.evolve(request, status="used")
            if request.status != "approved" or not tx.oauth.update_request(request, used):
                reused = request.grant_id
            else:
                grant = tx.oauth.get_grant(request.grant_id)
                if grant is None or grant.revoked_at_ms is not None:
                    raise _invalid_grant("code", "revoked")
                issued = self._issue(tx, grant, grant.scope, now)
                self._audit(
                    tx,
                    grant.grant_id,
                    grant.workspace,
                    "oauth.token.issue",
                    {"client_id": client_id, "grant_id": grant.grant_id},
                )
                return issued
        self._reuse(reused, "authorization code used twice")
        raise _invalid_grant("code", "used")

    def _issue(
        self, tx: Transaction, grant: OAuthGrantRecord, scope: str, now: int
    ) -> IssuedTokens:
        access, refresh = new_secret(ACCESS_PREFIX), new_secret(REFRESH_PREFIX)
        for made, kind, life in (
            (access, "access", OAUTH_ACCESS_TOKEN_MS),
            (refresh, "refresh", OAUTH_REFRESH_TOKEN_MS),
        ):
            tx.oauth.insert_token(
                OAuthTokenRecord(
                    token_id=made.id,
                    kind=kind,
                    grant_id=grant.grant_id,
                    secret_hash=made.hash,
                    scope=scope,
                    issued_at_ms=now,
                    expires_at_ms=now + life,
                )
            )
        return IssuedTokens(
            access_token=access.text,
            refresh_token=refresh.text,
            expires_in=OAUTH_ACCESS_TOKEN_MS // 1000,
            scope=scope,
            grant_id=grant.grant_id,
        )

    def _reuse(self, grant_id: str | None, why: str) -> None:
        """Revoke the family of a reused code or refresh token, audited as ``oauth.token.reuse``."""
        if grant_id is None:
            return
        with self.service.write() as tx:
            grant = tx.oauth.get_grant(grant_id)
            if grant is None:
                return
            tx.oauth.revoke_grant(grant_id, self.now_ms, why)
            self._audit(
                tx,
                grant_id,
                grant.workspace,
                "oauth.token.reuse",
                {"grant_id": grant_id},
                ErrorCode.TOKEN_REVOKED.value,
            )

    def refresh_token(
        self, client_id: str, token: str
    ) -> tuple[OAuthTokenRecord, OAuthGrantRecord] | None:
        """The live refresh token ``token`` of ``client_id`` and its grant, else ``None``.

        A refresh token that was already exchanged is reuse: its family is revoked here.
        """
        found = self._find(token, REFRESH_PREFIX)
        if found is None or found[1].client_id != client_id:
            self._refused(
                "oauth.token.refresh", {"client_id": client_id}, _invalid_grant("refresh token")
            )
            return None
        record, grant = found
        if record.rotated_at_ms is not None:
            self._reuse(grant.grant_id, "refresh token used twice")
            return None
        if record.revoked_at_ms is not None or grant.revoked_at_ms is not None:
            return None
        return record, grant

    def refresh(self, client_id: str, token: str, scopes: Sequence[str]) -> IssuedTokens:
        """Rotate a refresh token: a new access and refresh token, the old one spent.

        ``scopes`` may narrow the token's scope, never widen it. Presenting a spent refresh
        token (two racing refreshes included: one wins, the other is reuse) revokes the
        family.
        """
        parsed = parse_secret(token, REFRESH_PREFIX)
        if parsed is None:
            raise _invalid_grant("refresh token")
        now = self.now_ms
        with self.service.write() as tx:
            record = tx.oauth.get_token(parsed[0])
            grant = tx.oauth.get_grant(record.grant_id) if record is not None else None
            if (
                record is None
                or grant is None
                or record.kind != "refresh"
                or grant.client_id != client_id
                or not matches(record.secret_hash, parsed[1])
            ):
                raise _invalid_grant("refresh token")
            if record.revoked_at_ms is not None or grant.revoked_at_ms is not None:
                raise _invalid_grant("refresh token", "revoked")
            if record.expires_at_ms <= now:
                raise _invalid_grant("refresh token", "expired")
            fresh = tx.oauth.rotate_token(record.token_id, now)
            if fresh:
                held = split_scope(record.scope)
                asked = split_scope(" ".join(scopes)) if scopes else held
                if not set(asked) <= set(held) or cap(asked) is None:
                    raise OAuthRefusal(
                        ErrorCode.INVALID_VALUE,
                        "invalid_scope",
                        "a refresh may only narrow the scope",
                    )
                issued = self._issue(tx, grant, " ".join(asked), now)
                self._audit(
                    tx,
                    grant.grant_id,
                    grant.workspace,
                    "oauth.token.refresh",
                    {"client_id": client_id, "grant_id": grant.grant_id},
                )
                return issued
        self._reuse(grant.grant_id, "refresh token used twice")
        raise _invalid_grant("refresh token", "used")

    def _find(self, token: str, prefix: str) -> tuple[OAuthTokenRecord, OAuthGrantRecord] | None:
        parsed = parse_secret(token, prefix)
        if parsed is None:
            return None
        with self.service.storage.read() as tx:
            record = tx.oauth.get_token(parsed[0])
            grant = tx.oauth.get_grant(record.grant_id) if record is not None else None
        if record is None or grant is None or not matches(record.secret_hash, parsed[1]):
            return None
        return record, grant

    def access_token(self, token: str) -> tuple[OAuthTokenRecord, OAuthGrantRecord] | None:
        """An access token and its grant, live or not (revocation looks it up), else ``None``."""
        return self._find(token, ACCESS_PREFIX)

    def revoke(self, client_id: str, token: str) -> bool:
        """Revoke the family of an access or refresh token of ``client_id`` (RFC 7009).

        An unknown token, or one of another client, changes nothing (the endpoint answers
        200 all the same). Returns whether a live grant was revoked.
        """
        found = self._find(token, ACCESS_PREFIX) or self._find(token, REFRESH_PREFIX)
        if found is None or found[1].client_id != client_id:
            return False
        grant = found[1]
        with self.service.write() as tx:
            live = tx.oauth.revoke_grant(grant.grant_id, self.now_ms, "revoked by the client")
            self._audit(
                tx,
                grant.grant_id,
                grant.workspace,
                "oauth.token.revoke",
                {"client_id": client_id, "grant_id": grant.grant_id},
            )
        return live


def _invalid_grant(what: str, why: str = "unknown") -> OAuthRefusal:
    return OAuthRefusal(
        ErrorCode.UNAUTHENTICATED,
        "invalid_grant",
        f"the {what} is {why}; authorize again",
    )


def decide_in(
    tx: Transaction,
    now_ms: int,
    request_id: str,
    *,
    decider: Actor,
    approve: bool,
    workspace: str | None = None,
    tier: Tier | None = None,
    autonomy: int | None = None,
) -> tuple[OAuthRequestRecord, OAuthGrantRecord | None, str]:
    """Approve or deny a pending request in ``tx``; return it, the grant and the next URL.

    The next URL is where to send the person: the client's redirect URI with ``code`` or
    ``error``, ``state`` and ``iss`` (RFC 9207).

    A decider grants at most what they hold: their workspace (the local operator, who has
    none, names one), their tier and their autonomy, and at most what the requested scope
    allows. Approving mints the authorization code, shown only in the returned URL.
    """
    request = tx.oauth.get_request(request_id)
    if request is None:
        raise TaskError(
            ErrorCode.NOT_FOUND, f"no authorization request {request_id[:64]!r}", path="$.requestId"
        )
    if request.status != "pending":
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the authorization request was already {request.status}",
            path="$.requestId",
        )
    if request.expires_at_ms <= now_ms:
        raise TaskError(
            ErrorCode.CONFLICT,
            "the authorization request expired; start again from the client",
            path="$.requestId",
        )
    if not approve:
        denied = attrs.evolve(
            request, status="denied", decided_by=decider.token_id, decided_at_ms=now_ms
        )
        if not tx.oauth.update_request(request, denied):
            raise TaskError(ErrorCode.CONFLICT, "the authorization request was decided meanwhile")
        target = redirect_with(
            request.redirect_uri,
            error="access_denied",
            error_description="the person denied the request",
            state=request.state,
            iss=request.issuer,
        )
        return denied, None, target
    space = workspace or decider.workspace
    if not space or (decider.workspace and space != decider.workspace):
        raise TaskError(
            ErrorCode.FORBIDDEN,
            f"a grant is in your own workspace ({decider.workspace or 'name one'})",
            path="$.workspace",
        )
    wanted_tier = tier if tier is not None else Tier.AGENT
    wanted_autonomy = autonomy if autonomy is not None else 1
    if wanted_tier > decider.tier:
        raise TaskError(
            ErrorCode.FORBIDDEN, "a grant cannot outrank the person granting it", path="$.tier"
        )
    if wanted_autonomy > decider.autonomy:
        raise TaskError(
            ErrorCode.AUTONOMY_EXCEEDED,
            f"a grant's autonomy is at most yours ({decider.autonomy})",
            path="$.autonomy",
        )
    allowed = cap(split_scope(request.scope)) or (Tier.AGENT, 0)
    granted_tier, granted_autonomy = min(wanted_tier, allowed[0]), min(wanted_autonomy, allowed[1])
    grant = OAuthGrantRecord(
        grant_id=new_grant_id(),
        client_id=request.client_id,
        client_name=request.client_name,
        workspace=space,
        tier=granted_tier.wire,
        autonomy=granted_autonomy,
        scope=" ".join(scopes_for(granted_tier, granted_autonomy)),
        resource=request.resource,
        granted_by=decider.token_id,
        created_at_ms=now_ms,
    )
    code = new_secret(CODE_PREFIX)
    approved = attrs.evolve(
        request,
        status="approved",
        decided_by=decider.token_id,
        decided_at_ms=now_ms,
        grant_id=grant.grant_id,
        code_id=code.id,
        code_hash=code.hash,
        code_expires_at_ms=now_ms + OAUTH_CODE_MS,
    )
    if not tx.oauth.update_request(request, approved):
        raise TaskError(ErrorCode.CONFLICT, "the authorization request was decided meanwhile")
    tx.oauth.insert_grant(grant)
    target = redirect_with(
        request.redirect_uri, code=code.text, state=request.state, iss=request.issuer
    )
    return approved, grant, target
