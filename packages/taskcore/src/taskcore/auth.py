"""Bearer tokens: issue, authenticate, revoke. Only SHA-256 hashes are stored.

A token reads ``atk_<id>_<secret>``: ``id`` (16 hex) finds the record, ``secret`` (64 hex)
is hashed and compared with the stored hash in constant time.

>>> import tempfile
>>> from taskcore.store import open_storage
>>> from taskcore.clock import FakeClock
>>> storage = open_storage(tempfile.mkdtemp(), create=True)
>>> issued = issue_token(storage, FakeClock(), workspace="w1", tier=Tier.AGENT, autonomy=1)
>>> authenticate(storage, issued.token).workspace
'w1'
>>> storage.close()
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

import attrs

from taskcore.actors import MAX_AUTONOMY, Actor, Tier
from taskcore.clock import Clock
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.storage import Storage, Transaction
from taskcore.store.tokens_api import TokenRecord

__all__ = [
    "IssuedToken",
    "WORKSPACE_PATTERN",
    "actor_from_record",
    "authenticate",
    "authenticate_in",
    "issue_token",
    "list_tokens",
    "parse_token",
    "revoke_token",
]

_TOKEN = re.compile(r"atk_([0-9a-f]{16})_([0-9a-f]{64})")
WORKSPACE_PATTERN = r"[A-Za-z0-9._-]{1,128}"
_WORKSPACE = re.compile(WORKSPACE_PATTERN)


@attrs.frozen(kw_only=True)
class IssuedToken:
    """A freshly issued token: the bearer secret (shown once) and its record."""

    token: str
    record: TokenRecord


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def parse_token(token: str) -> tuple[str, str]:
    """Split a bearer token into ``(token_id, secret)`` or raise ``UNAUTHENTICATED``."""
    match = _TOKEN.fullmatch(token.strip()) if isinstance(token, str) else None
    if match is None:
        raise TaskError(ErrorCode.UNAUTHENTICATED, "the bearer token is malformed; use a token "
                        "printed by 'agent-task admin token create'")
    return match.group(1), match.group(2)


def actor_from_record(record: TokenRecord) -> Actor:
    """Return the actor a live token record stands for."""
    return Actor(
        token_id=record.token_id,
        workspace=record.workspace,
        tier=Tier.from_wire(record.tier),
        autonomy=record.autonomy,
        name=record.name,
    )


def authenticate_in(tx: Transaction, token: str) -> Actor:
    """Authenticate ``token`` inside an open transaction (used as the live authorization guard)."""
    token_id, secret = parse_token(token)
    record = tx.tokens.get(token_id)
    expected = record.secret_hash if record is not None else "0" * 64
    matches = hmac.compare_digest(expected, _hash(secret))
    if record is None or not matches:
        raise TaskError(ErrorCode.UNAUTHENTICATED, "the bearer token is not known")
    if record.revoked_at_ms is not None:
        raise TaskError(ErrorCode.TOKEN_REVOKED, "the bearer token was revoked; ask an admin for "
                        "a new one")
    return actor_from_record(record)


def authenticate(storage: Storage, token: str) -> Actor:
    """Authenticate ``token`` in a read transaction; return its actor."""
    with storage.read() as tx:
        return authenticate_in(tx, token)


def issue_token(
    storage: Storage,
    clock: Clock,
    *,
    workspace: str,
    tier: Tier,
    autonomy: int = 1,
    name: str = "",
) -> IssuedToken:
    """Create a token; the returned secret is the only copy that will ever exist."""
    if _WORKSPACE.fullmatch(workspace) is None:
        raise TaskError(ErrorCode.INVALID_VALUE, f"workspace must match {WORKSPACE_PATTERN}")
    if not 0 <= autonomy <= MAX_AUTONOMY:
        raise TaskError(ErrorCode.OUT_OF_BOUNDS, f"autonomy must be between 0 and {MAX_AUTONOMY}")
    if len(name) > 128:
        raise TaskError(ErrorCode.OUT_OF_BOUNDS, "token names are at most 128 characters")
    token_id = secrets.token_hex(8)
    secret = secrets.token_hex(32)
    record = TokenRecord(
        token_id=token_id,
        name=name,
        workspace=workspace,
        tier=tier.wire,
        autonomy=autonomy,
        secret_hash=_hash(secret),
        created_at_ms=clock.now_ms(),
    )
    with storage.write() as tx:
        tx.tokens.insert(record)
    return IssuedToken(token=f"atk_{token_id}_{secret}", record=record)


def list_tokens(storage: Storage, *, workspace: str | None = None) -> tuple[TokenRecord, ...]:
    """Return token records (hashes only, never secrets)."""
    with storage.read() as tx:
        return tx.tokens.list(workspace=workspace)


def revoke_token(storage: Storage, clock: Clock, token_id: str) -> bool:
    """Revoke a token by id; return whether it was live. Its next request is refused."""
    with storage.write() as tx:
        if tx.tokens.get(token_id) is None:
            raise TaskError(ErrorCode.NOT_FOUND, f"no token with id {token_id!r}")
        return tx.tokens.revoke(token_id, clock.now_ms())
