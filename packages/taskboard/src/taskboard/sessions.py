"""Server-side board sessions: the pasted token stays in this process, the browser holds an id.

A session is created when a token signs in. The cookie carries only a random session id
(32 bytes, URL-safe); the bearer token and the session's CSRF token stay here, in memory,
so a stolen cookie is useless after sign-out, expiry or a restart, and nothing secret is
ever written to disk or to the browser. Sessions end after ``idle_ms`` without a request or
``absolute_ms`` after sign-in, whichever comes first; at most ``max_sessions`` live at once
(the oldest is dropped).

>>> clock = iter(range(0, 10**9, 1000)).__next__
>>> store = SessionStore(idle_ms=5000, absolute_ms=60_000, now_ms=clock)
>>> s = store.create("atk_x", "tokenid", "w1")
>>> store.get(s.session_id).workspace
'w1'
>>> store.get("nope") is None
True
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import attrs

__all__ = ["Session", "SessionStore"]

IDLE_MS = 30 * 60 * 1000
"""A session ends after this long without a request (ours: 30 minutes)."""
ABSOLUTE_MS = 12 * 60 * 60 * 1000
"""A session ends this long after sign-in whatever happens (ours: 12 hours)."""
MAX_SESSIONS = 1024
"""Live sessions kept at once (ours); the least recently used goes first."""


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@attrs.define(kw_only=True)
class Session:
    """One signed-in browser: its token (never sent back), CSRF token and expiry."""

    session_id: str
    bearer: str = attrs.field(repr=False)
    token_id: str
    workspace: str
    csrf: str = attrs.field(repr=False)
    created_ms: int
    seen_ms: int
    flash: str | None = None
    secret_once: str | None = attrs.field(default=None, repr=False)

    def csrf_ok(self, value: str | None) -> bool:
        """Compare a form's CSRF token with this session's, in constant time."""
        return isinstance(value, str) and hmac.compare_digest(value, self.csrf)


class SessionStore:
    """In-memory sessions with idle and absolute expiry (thread-safe)."""

    def __init__(
        self,
        *,
        idle_ms: int = IDLE_MS,
        absolute_ms: int = ABSOLUTE_MS,
        max_sessions: int = MAX_SESSIONS,
        now_ms: Callable[[], int] = _monotonic_ms,
    ) -> None:
        self.idle_ms = idle_ms
        self.absolute_ms = absolute_ms
        self.max_sessions = max_sessions
        self._now = now_ms
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def create(self, bearer: str, token_id: str, workspace: str) -> Session:
        """Start a session for an authenticated token; return it (its id goes in the cookie)."""
        now = self._now()
        session = Session(
            session_id=secrets.token_urlsafe(32),
            bearer=bearer,
            token_id=token_id,
            workspace=workspace,
            csrf=secrets.token_urlsafe(32),
            created_ms=now,
            seen_ms=now,
        )
        with self._lock:
            self._sessions[session.session_id] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """Return the live session with this id (refreshing its idle timer), else ``None``."""
        if not session_id:
            return None
        now = self._now()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if now - session.seen_ms > self.idle_ms or now - session.created_ms > self.absolute_ms:
                del self._sessions[session_id]
                return None
            session.seen_ms = now
            self._sessions.move_to_end(session_id)
            return session

    def end(self, session_id: str | None) -> None:
        """Forget a session (sign-out, a revoked token)."""
        if session_id:
            with self._lock:
                self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
