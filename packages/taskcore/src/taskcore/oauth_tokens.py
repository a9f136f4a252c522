"""OAuth secrets, and authenticating an access token into the :class:`~taskcore.Actor`.

Codes, access tokens and refresh tokens read ``<prefix>_<id>_<secret>`` like bearer tokens
(:mod:`taskcore.auth`): ``id`` (16 hex) finds the row, ``secret`` (64 hex, from
:func:`secrets.token_hex`) is hashed with SHA-256 and compared with the stored hash in
constant time. Only the hash is ever stored. The prefix says what it is: ``atc`` a code,
``ato`` an access token, ``atr`` a refresh token; a grant is named ``oag_<id>``.

An access token authenticates as its grant: the actor's ``token_id`` is the grant id (stable
across refreshes, so a lease taken before a refresh is still the agent's after it), its
workspace the grant's, and its tier and autonomy the lower of the grant's and what the
token's scopes allow (:func:`taskcore.scopes.cap`). It is refused (``UNAUTHENTICATED``,
HTTP 401) when it is unknown, expired, revoked, or presented to a resource other than the
one it was issued for (RFC 8707).

>>> made = new_secret("ato")
>>> parse_secret(made.text, "ato") == (made.id, made.secret)
True
>>> matches(made.hash, made.secret)
True
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time

import attrs

from taskcore.actors import Actor, Tier
from taskcore.errors import ErrorCode, TaskError
from taskcore.scopes import cap, split_scope
from taskcore.store.oauth_api import OAuthGrantRecord, OAuthTokenRecord
from taskcore.store.storage import Transaction

__all__ = [
    "ACCESS_PREFIX",
    "CODE_PREFIX",
    "GRANT_PREFIX",
    "REFRESH_PREFIX",
    "NewSecret",
    "actor_for",
    "authenticate_access_in",
    "hash_secret",
    "is_access_token",
    "is_grant_id",
    "matches",
    "new_grant_id",
    "new_secret",
    "parse_secret",
    "resource_allows",
]

ACCESS_PREFIX = "ato"
REFRESH_PREFIX = "atr"
CODE_PREFIX = "atc"
GRANT_PREFIX = "oag_"

_SECRET = re.compile(r"(at[cor])_([0-9a-f]{16})_([0-9a-f]{64})")
_ZERO_HASH = "0" * 64


@attrs.frozen(kw_only=True)
class NewSecret:
    """A fresh secret: the text handed out once, its row id and the hash to store."""

    text: str = attrs.field(repr=False)
    id: str
    secret: str = attrs.field(repr=False)
    hash: str


def hash_secret(secret: str) -> str:
    """The SHA-256 (hex) of a secret, what the journal keeps."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def matches(stored_hash: str | None, secret: str) -> bool:
    """Whether ``secret`` hashes to ``stored_hash``, compared in constant time."""
    return hmac.compare_digest(stored_hash or _ZERO_HASH, hash_secret(secret)) and bool(stored_hash)


def new_secret(prefix: str) -> NewSecret:
    """A new code or token with ``prefix`` (``atc``, ``ato``, ``atr``)."""
    token_id = secrets.token_hex(8)
    secret = secrets.token_hex(32)
    return NewSecret(
        text=f"{prefix}_{token_id}_{secret}", id=token_id, secret=secret, hash=hash_secret(secret)
    )


def new_grant_id() -> str:
    """A new grant id (``oag_`` and 16 hex)."""
    return GRANT_PREFIX + secrets.token_hex(8)


def parse_secret(text: str, prefix: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a code or token with ``prefix``, or ``None`` if it is not one."""
    if not isinstance(text, str):
        return None
    match = _SECRET.fullmatch(text.strip())
    if match is None or match.group(1) != prefix:
        return None
    return match.group(2), match.group(3)


def is_access_token(bearer: str | None) -> bool:
    """Whether a bearer credential is shaped like one of our OAuth access tokens.

    >>> is_access_token("ato_x"), is_access_token("atk_0123")
    (True, False)
    """
    return isinstance(bearer, str) and bearer.startswith(ACCESS_PREFIX + "_")


def is_grant_id(token_id: str) -> bool:
    """Whether an actor's ``token_id`` names an OAuth grant (not a bearer token)."""
    return token_id.startswith(GRANT_PREFIX)


def _normal(url: str) -> str:
    return url.rstrip("/")


def resource_allows(token_resource: str, resource: str) -> bool:
    """Whether a token issued for ``token_resource`` may be used at ``resource``.

    The same URL (a trailing slash aside), or the server's origin, which names every
    resource of this server (the root protected-resource metadata document's resource).

    >>> resource_allows("https://h/mcp", "https://h/mcp/")
    True
    >>> resource_allows("https://h", "https://h/mcp")
    True
    >>> resource_allows("https://h/mcp", "https://h/v1/hub/workspace/mcp")
    False
    """
    token, wanted = _normal(token_resource), _normal(resource)
    if token == wanted:
        return True
    scheme, sep, rest = wanted.partition("://")
    return bool(sep) and token == f"{scheme}://{rest.split('/', 1)[0]}"


def actor_for(grant: OAuthGrantRecord, scope: str) -> Actor:
    """The actor a token of ``grant`` with ``scope`` acts as (the lower of the two)."""
    allowed = cap(split_scope(scope))
    tier = Tier.from_wire(grant.tier)
    autonomy = grant.autonomy
    if allowed is not None:
        tier, autonomy = min(tier, allowed[0]), min(autonomy, allowed[1])
    return Actor(
        token_id=grant.grant_id,
        workspace=grant.workspace,
        tier=tier,
        autonomy=autonomy,
        name=("oauth:" + grant.client_name)[:128],
    )


def _refused(message: str) -> TaskError:
    return TaskError(ErrorCode.UNAUTHENTICATED, message)


def authenticate_access_in(
    tx: Transaction, token: str, *, resource: str | None, now_ms: int | None = None
) -> tuple[Actor, OAuthTokenRecord]:
    """Authenticate an OAuth access token inside an open transaction.

    ``resource`` is the URL of the protected resource the request came to; ``None`` (a door
    that is not an MCP endpoint) refuses every OAuth token, which is bound to the MCP
    resource it was issued for. Raises ``UNAUTHENTICATED`` otherwise when the token is
    unknown, expired or revoked, with a message that says what to do.
    """
    transaction = tx
    parsed = parse_secret(token, ACCESS_PREFIX)
    record = transaction.oauth.get_token(parsed[0]) if parsed is not None else None
    ok = matches(record.secret_hash if record is not None else None, parsed[1] if parsed else "")
    if parsed is None or record is None or record.kind != "access" or not ok:
        raise _refused("the OAuth access token is not known; authorize again")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if record.revoked_at_ms is not None:
        raise _refused("the OAuth access token was revoked; authorize again")
    if record.expires_at_ms <= now:
        raise _refused("the OAuth access token expired; refresh it or authorize again")
    grant = transaction.oauth.get_grant(record.grant_id)
    if grant is None or grant.revoked_at_ms is not None:
        raise _refused("the OAuth grant of this token was revoked; authorize again")
    if resource is None:
        raise _refused(
            "an OAuth access token is accepted by the MCP endpoints only; use a bearer token "
            "from 'agent-task admin token create' here"
        )
    if not resource_allows(grant.resource, resource):
        raise _refused(
            f"this OAuth access token was issued for {grant.resource[:256]}, not for "
            f"{resource[:256]}; authorize for this resource"
        )
    return actor_for(grant, record.scope), record
