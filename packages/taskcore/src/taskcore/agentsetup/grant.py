"""The CLI's own OAuth grant: the file ``agent-task agent login`` writes and the hooks read.

With ``agent setup --oauth`` the harness runs the MCP OAuth flow itself and keeps its tokens in
its own store, which nothing of ours reads. The hooks (SessionStart) still ask the service as
this agent, so the command line holds a grant of its own: ``agent-task agent login --url URL``
runs the authorization-code flow with PKCE as a native app (RFC 8252; :mod:`taskcli.agent_login`)
and stores the tokens here, in a JSON file of mode 0600 under the user's config dir
(:func:`default_grant_path`), never in a work tree.

The file::

    {"version": 1, "url": "http://127.0.0.1:8787", "issuer": "...", "tokenEndpoint": "...",
     "resource": "http://127.0.0.1:8787/mcp", "clientId": "...", "scope": "...",
     "accessToken": "ato_...", "refreshToken": "atr_...", "expiresAtMs": 1764...}

:func:`current_token` is what a hook calls: the access token while it has more than
:data:`REFRESH_MARGIN_MS` to live; otherwise, under an exclusive lock on ``<file>.lock`` (hooks
run concurrently, and the server treats a spent refresh token presented again as theft and
revokes the whole grant), the file is read again and, if still stale, refreshed once at the
token endpoint (the refresh token rotates) and written back atomically.

Standard library only, and not the ``json`` package on the hook's path (its Python half loads
``re`` and ``enum``: the file is read with :func:`taskcore.agentsetup.sessionstart.parse`, the
``_json`` scanner; ``json`` is imported only to write a refreshed grant). The HTTP exchange is
the caller's (``post``), since taskcore speaks no HTTP.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: importing typing alone costs a hook ~5 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Post = Callable[[str, bytes, dict[str, str]], tuple[int, bytes]]

__all__ = [
    "FIELDS",
    "GRANT_VERSION",
    "REFRESH_MARGIN_MS",
    "GrantError",
    "current_token",
    "default_grant_path",
    "fresh",
    "load",
    "refresh",
    "save",
    "updated",
]

GRANT_VERSION = 1
REFRESH_MARGIN_MS = 60_000
"""An access token with less than this left is refreshed before use."""

FIELDS = (
    "url",
    "issuer",
    "tokenEndpoint",
    "resource",
    "clientId",
    "scope",
    "accessToken",
    "refreshToken",
)
"""The text fields a grant file must hold (besides ``version`` and ``expiresAtMs``)."""

_MAX_BYTES = 64 * 1024


class GrantError(Exception):
    """The grant cannot give a token; the message says why and what to run."""


def default_grant_path() -> str:
    """``$AGENT_TASK_GRANT_FILE``, else ``$XDG_CONFIG_HOME/agent-task/grant.json``.

    (``~/.config`` when ``XDG_CONFIG_HOME`` is unset.)
    """
    given = os.environ.get("AGENT_TASK_GRANT_FILE", "").strip()
    if given:
        return os.path.expanduser(given)
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
    return os.path.join(base, "agent-task", "grant.json")


def _relogin(path: str) -> str:
    return f"run 'agent-task agent login --grant-file {path}'"


def load(path: str) -> dict[str, Any]:
    """The grant of ``path``; :class:`GrantError` when missing, unreadable or malformed."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        raise GrantError(f"no grant at {path}: {_relogin(path)}") from None
    except OSError as err:
        raise GrantError(f"the grant {path} cannot be read ({type(err).__name__})") from None
    from taskcore.agentsetup.sessionstart import parse

    try:
        data = parse(raw) if len(raw) <= _MAX_BYTES else None
    except (ValueError, RecursionError):
        data = None
    if (
        not isinstance(data, dict)
        or data.get("version") != GRANT_VERSION
        or not all(isinstance(data.get(k), str) and data[k] for k in FIELDS)
        or type(data.get("expiresAtMs")) is not int
    ):
        raise GrantError(f"the grant {path} is not a grant file: {_relogin(path)}")
    return data


def save(path: str, grant: dict[str, Any]) -> None:
    """Write ``grant`` to ``path`` atomically, mode 0600 (its directory 0700 when created)."""
    import json

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(grant, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def fresh(grant: dict[str, Any], now_ms: int) -> bool:
    """Whether the access token has more than :data:`REFRESH_MARGIN_MS` to live."""
    return int(grant["expiresAtMs"]) - REFRESH_MARGIN_MS > now_ms


def _form(fields: dict[str, str]) -> bytes:
    from urllib.parse import urlencode

    return urlencode(fields).encode("ascii")


def refresh(grant: dict[str, Any], post: Post, now_ms: int) -> dict[str, Any]:
    """The grant after one ``refresh_token`` exchange (RFC 6749 6; the refresh token rotates).

    ``post(url, body, headers)`` sends the form and returns ``(status, body)`` (``OSError``:
    no answer). :class:`GrantError` when the service refuses or answers nonsense.
    """
    body = _form(
        {
            "grant_type": "refresh_token",
            "refresh_token": grant["refreshToken"],
            "client_id": grant["clientId"],
            "resource": grant["resource"],
        }
    )
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
    }
    try:
        status, content = post(grant["tokenEndpoint"], body, headers)
    except OSError as failure:
        raise GrantError(
            f"the token endpoint {grant['tokenEndpoint'][:200]} did not answer "
            f"({str(failure)[:40]})"
        ) from None
    from taskcore.agentsetup.sessionstart import parse

    try:
        answer = parse(content)
    except (ValueError, RecursionError):
        answer = None
    if status != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        why = f"{error}" if isinstance(error, str) else f"HTTP {status}"
        raise GrantError(
            f"the service refused to refresh the grant ({why[:60]}): log in again with "
            f"'agent-task agent login --url {grant['url']}'"
        )
    return updated(grant, answer, now_ms)


def updated(grant: dict[str, Any], answer: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """``grant`` with the tokens of a token endpoint ``answer``; :class:`GrantError` if bad."""
    access, renewed = answer.get("access_token"), answer.get("refresh_token")
    expires_in = answer.get("expires_in")
    if (
        not isinstance(access, str)
        or not access
        or type(expires_in) is not int
        or (renewed is not None and not isinstance(renewed, str))
    ):
        raise GrantError("the token endpoint's answer is malformed")
    out = dict(grant)
    out["accessToken"] = access
    out["refreshToken"] = renewed or grant["refreshToken"]
    out["expiresAtMs"] = now_ms + expires_in * 1000
    scope = answer.get("scope")
    if isinstance(scope, str) and scope:
        out["scope"] = scope
    return out


def current_token(
    path: str, post: Post, now_ms: Callable[[], int], *, force: bool = False
) -> tuple[str, dict[str, Any]]:
    """The access token of the grant at ``path`` (refreshed first when stale, or ``force``).

    Returns the token and the grant as written. The refresh happens under an exclusive lock
    on ``<path>.lock``, after reading the file again: of several hooks starting at once, one
    refreshes and the others read its result.
    """
    grant = load(path)
    if not force and fresh(grant, now_ms()):
        return grant["accessToken"], grant
    import fcntl

    lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        again = load(path)
        if again["refreshToken"] != grant["refreshToken"] or (not force and fresh(again, now_ms())):
            return again["accessToken"], again  # another process refreshed meanwhile
        renewed = refresh(again, post, now_ms())
        save(path, renewed)
        return renewed["accessToken"], renewed
    finally:
        os.close(lock_fd)  # releases the lock
