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
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import attrs

from taskcore.actors import MAX_AUTONOMY, Actor, Tier
from taskcore.clock import Clock, SystemClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import ADMISSION_MEMORY_KEYS_MAX, ADMISSION_MEMORY_MS
from taskcore.oauth_tokens import authenticate_access_in, is_access_token, is_grant_id
from taskcore.store.storage import Storage, Transaction, open_storage
from taskcore.store.tokens_api import TokenRecord
from taskcore.tokenfile import no_token_error, read_token_file

__all__ = [
    "FIRST_ADMIN_TOKEN_FILENAME",
    "FIRST_ADMIN_WORKSPACE",
    "WORKSPACE_PATTERN",
    "IssuedToken",
    "RecentAdmissions",
    "TokenAdmin",
    "TokenRecord",
    "actor_from_record",
    "authenticate",
    "authenticate_in",
    "bearer_from_header",
    "check_live_in",
    "issue_first_admin_token",
    "issue_token",
    "issue_token_in",
    "list_tokens",
    "no_token_error",
    "parse_token",
    "read_token_file",
    "revoke_token",
]

FIRST_ADMIN_TOKEN_FILENAME = "admin.token"  # noqa: S105 - a file name, not a secret
"""Where the first start of a fresh data directory writes its admin token (mode 0600)."""

FIRST_ADMIN_WORKSPACE = "default"
"""The workspace the first admin token is bound to."""

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
        raise TaskError(
            ErrorCode.UNAUTHENTICATED,
            "the bearer token is malformed; use a token printed by 'agent-task admin token create'",
        )
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


def authenticate_in(
    tx: Transaction, token: str, *, resource: str | None = None, now_ms: int | None = None
) -> Actor:
    """Authenticate ``token`` inside an open transaction (used as the live authorization guard).

    A bearer token from ``agent-task admin token create`` authenticates on every door. An
    OAuth access token (:mod:`taskcore.oauth_tokens`) authenticates into the same kind of
    :class:`~taskcore.actors.Actor`, but only at the protected ``resource`` it was issued for
    (the MCP endpoint's URL; ``None`` refuses it).
    """
    if is_access_token(token):
        return authenticate_access_in(tx, token, resource=resource, now_ms=now_ms)[0]
    token_id, secret = parse_token(token)
    record = tx.tokens.get(token_id)
    expected = record.secret_hash if record is not None else "0" * 64
    matches = hmac.compare_digest(expected, _hash(secret))
    if record is None or not matches:
        raise TaskError(ErrorCode.UNAUTHENTICATED, "the bearer token is not known")
    if record.revoked_at_ms is not None:
        raise TaskError(
            ErrorCode.TOKEN_REVOKED, "the bearer token was revoked; ask an admin for a new one"
        )
    return actor_from_record(record)


def check_live_in(tx: Transaction, token_id: str) -> None:
    """Raise ``TOKEN_REVOKED`` if the credential an actor came from was revoked since.

    The live authorization guard of a call that holds an actor (not its bearer): a bearer
    token's row, or an OAuth grant's (revoking a grant revokes its whole token family).
    In-process actors built by trusted code have neither and pass.
    """
    record = tx.tokens.get(token_id)
    if record is not None:
        if record.revoked_at_ms is not None:
            raise TaskError(ErrorCode.TOKEN_REVOKED, "the bearer token was revoked")
        return
    if is_grant_id(token_id):
        grant = tx.oauth.get_grant(token_id)
        if grant is None or grant.revoked_at_ms is not None:
            raise TaskError(
                ErrorCode.TOKEN_REVOKED, "the OAuth grant was revoked; authorize the client again"
            )


class RecentAdmissions:
    """Bearers that authenticated moments ago, remembered for ``memory_ms`` (in memory only).

    A network transport asks :meth:`taskcore.Service.admit` before it reads a request's body;
    that is a storage read and, on a server, a hop to a worker thread. A bearer it admitted
    within the last ``memory_ms`` is admitted again from here, on the event loop. Only the
    decision to *read the body* is taken from memory: the call itself authenticates the
    bearer again in its own transaction, so a token revoked since is refused, audited, as
    before. Entries are keyed by the SHA-256 of the bearer (never the bearer itself), at most
    ``keys_max`` of them (the oldest go first). ``memory_ms`` 0 turns it off.

    >>> now = [0.0]
    >>> recent = RecentAdmissions(memory_ms=1000, clock=lambda: now[0])
    >>> actor = Actor(token_id="t1", workspace="w1", tier=Tier.AGENT, autonomy=1)
    >>> recent.remember("atk_x", actor)
    >>> recent.recall("atk_x") == actor
    True
    >>> now[0] = 1.5
    >>> recent.recall("atk_x") is None
    True
    """

    def __init__(
        self,
        *,
        memory_ms: int = ADMISSION_MEMORY_MS,
        keys_max: int = ADMISSION_MEMORY_KEYS_MAX,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.memory = memory_ms / 1000
        self.keys_max = keys_max
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[Actor, float]] = {}

    def remember(self, bearer: str, actor: Actor) -> None:
        """Note that ``bearer`` authenticated as ``actor`` now."""
        if self.memory <= 0:
            return
        key = _hash_bearer(bearer)
        with self._lock:
            entries = self._entries
            entries.pop(key, None)
            while len(entries) >= self.keys_max:
                del entries[next(iter(entries))]
            entries[key] = (actor, self._clock() + self.memory)

    def recall(self, bearer: str) -> Actor | None:
        """The actor ``bearer`` authenticated as within ``memory_ms``, or ``None``."""
        if self.memory <= 0:
            return None
        entry = self._entries.get(_hash_bearer(bearer))
        if entry is None or entry[1] <= self._clock():
            return None
        return entry[0]

    def forget(self, bearer: str) -> None:
        """Drop ``bearer`` (it failed authentication since)."""
        with self._lock:
            self._entries.pop(_hash_bearer(bearer), None)


def _hash_bearer(bearer: str) -> str:
    return hashlib.sha256(bearer.encode("utf-8", "surrogatepass")).hexdigest()


def authenticate(storage: Storage, token: str) -> Actor:
    """Authenticate ``token`` in a read transaction; return its actor."""
    with storage.read() as tx:
        return authenticate_in(tx, token)


def _new_token(now_ms: int, *, workspace: str, tier: Tier, autonomy: int, name: str) -> IssuedToken:
    if not isinstance(workspace, str) or _WORKSPACE.fullmatch(workspace) is None:
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
        created_at_ms=now_ms,
    )
    return IssuedToken(token=f"atk_{token_id}_{secret}", record=record)


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
    issued = _new_token(
        clock.now_ms(), workspace=workspace, tier=tier, autonomy=autonomy, name=name
    )
    with storage.write() as tx:
        tx.tokens.insert(issued.record)
    return issued


def issue_token_in(
    tx: Transaction,
    now_ms: int,
    *,
    workspace: str,
    tier: Tier,
    autonomy: int = 1,
    name: str = "",
) -> IssuedToken:
    """Create a token inside an open write transaction (an operation's handler).

    The returned secret is the only copy; only its SHA-256 is stored.
    """
    issued = _new_token(now_ms, workspace=workspace, tier=tier, autonomy=autonomy, name=name)
    tx.tokens.insert(issued.record)
    return issued


def list_tokens(storage: Storage, *, workspace: str | None = None) -> tuple[TokenRecord, ...]:
    """Return token records (hashes only, never secrets)."""
    with storage.read() as tx:
        return tx.tokens.list(workspace=workspace)


def revoke_token(storage: Storage, clock: Clock, token_id: str) -> bool:
    """Revoke a token by id; return whether it was live. Its next request is refused."""
    with storage.write() as tx:
        if tx.tokens.get(token_id) is None:
            raise TaskError(ErrorCode.NOT_FOUND, f"no token with id {token_id!r}")
        revoked = tx.tokens.revoke(token_id, clock.now_ms())
        # Receipts whose originating grant this was stop counting: withdraw their statuses.
        from taskcore.evidence.withdrawal import withdraw_published

        withdraw_published(tx, clock.now_ms())
        return revoked


def bearer_from_header(value: str | None) -> str | None:
    """Return the token of an ``Authorization: Bearer <token>`` header value, else ``None``.

    The scheme is case-insensitive (RFC 9110); anything but one bearer credential is ``None``,
    which the front door reports as ``UNAUTHENTICATED``.

    >>> bearer_from_header("Bearer atk_x")
    'atk_x'
    >>> bearer_from_header("Basic Zm9vOmJhcg==") is None
    True
    """
    if not value:
        return None
    scheme, _, credential = value.strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential or " " in credential:
        return None
    return credential


def issue_first_admin_token(storage: Storage, clock: Clock, data_dir: Path | str) -> Path | None:
    """On a fresh journal (no token ever issued), write an admin token to ``admin.token``.

    The file is created with mode 0600 and never overwritten; the token is bound to the
    ``default`` workspace with the admin tier and full autonomy. Returns the file path when a
    token was written, ``None`` when the journal already had tokens (so it happens once).

    >>> import tempfile
    >>> from taskcore.store import open_storage
    >>> from taskcore.clock import FakeClock
    >>> tmp = tempfile.mkdtemp()
    >>> storage = open_storage(tmp, create=True)
    >>> issue_first_admin_token(storage, FakeClock(), tmp).name
    'admin.token'
    >>> issue_first_admin_token(storage, FakeClock(), tmp) is None
    True
    >>> storage.close()
    """
    path = Path(data_dir) / FIRST_ADMIN_TOKEN_FILENAME
    issued = _new_token(
        clock.now_ms(),
        workspace=FIRST_ADMIN_WORKSPACE,
        tier=Tier.ADMIN,
        autonomy=MAX_AUTONOMY,
        name="first-admin",
    )
    # One write transaction decides "first start": concurrent starters serialize on it, and
    # a failure to write the file rolls the token back, so no token exists that nobody holds.
    with storage.write() as tx:
        if tx.tokens.list():
            return None
        tx.tokens.insert(issued.record)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError:
            raise TaskError(
                ErrorCode.ALREADY_EXISTS,
                f"cannot create {path.name} in the data directory (it exists or the directory "
                "is not writable); remove a stale file or create a token with "
                "'agent-task admin token create'",
            ) from None
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(issued.token + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    return path


class TokenAdmin:
    """Operator token commands against a data directory (run on the service host).

    Adapters use this instead of opening the journal themselves. ``create=True`` creates the
    data directory and journal if missing (issuing a token before the first ``serve``), but
    never over the state of an earlier journal (``JOURNAL_MISSING``; ``init=True`` moves that
    state aside first); otherwise a missing journal is ``NOT_FOUND`` and nothing is created.

    >>> import tempfile
    >>> with TokenAdmin(tempfile.mkdtemp(), create=True) as admin:
    ...     issued = admin.create(workspace="w1", tier=Tier.AGENT)
    ...     [r.workspace for r in admin.list()]
    ['w1']
    """

    def __init__(
        self,
        data_dir: Path | str,
        *,
        create: bool = False,
        clock: Clock | None = None,
        init: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.clock: Clock = clock or SystemClock()
        self.storage = open_storage(self.data_dir, create=create, init=init)
        self.set_aside: tuple[Path, ...] = self.storage.set_aside
        """Files of an earlier journal that ``init=True`` renamed aside (new paths)."""

    def __enter__(self) -> TokenAdmin:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the journal."""
        self.storage.close()

    def create(
        self, *, workspace: str, tier: Tier, autonomy: int = 1, name: str = ""
    ) -> IssuedToken:
        """Issue a token (see :func:`issue_token`)."""
        return issue_token(
            self.storage, self.clock, workspace=workspace, tier=tier, autonomy=autonomy, name=name
        )

    def list(self, *, workspace: str | None = None) -> tuple[TokenRecord, ...]:
        """List token records (see :func:`list_tokens`)."""
        return list_tokens(self.storage, workspace=workspace)

    def revoke(self, token_id: str) -> bool:
        """Revoke a token (see :func:`revoke_token`)."""
        return revoke_token(self.storage, self.clock, token_id)

    def first_admin_token(self) -> Path | None:
        """Write the first admin token on a fresh journal (see :func:`issue_first_admin_token`)."""
        return issue_first_admin_token(self.storage, self.clock, self.data_dir)
