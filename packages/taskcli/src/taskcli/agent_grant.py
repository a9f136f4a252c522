"""The HTTP half of the CLI's OAuth grant (:mod:`taskcore.agentsetup.grant`): refresh and ask.

Standard library only for a plain ``http://`` service (:class:`taskcli.plainhttp.PlainHttp`,
what the hooks use); ``https://`` goes through httpx, which verifies the certificate. The
SessionStart hook and ``agent doctor`` use it, so it imports neither click nor
:mod:`taskcli.common`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing alone costs a hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = ["grant_token", "mcp_call", "now_ms", "post"]


def now_ms() -> int:
    """The wall clock in milliseconds (what the grant's ``expiresAtMs`` is in)."""
    import time

    return time.time_ns() // 1_000_000


def post(
    url: str, body: bytes, headers: dict[str, str], timeout: float = 10.0
) -> tuple[int, bytes]:
    """``POST url``; ``(status, body)``, or ``OSError`` naming the transport failure."""
    from taskcli.plainhttp import HttpError, PlainHttp, split_url

    parts = split_url(url)
    if parts is not None and 0 < int(parts[1] or 80) < 65536:
        host, port, path = parts
        http = PlainHttp(host, int(port or 80), "", timeout)
        try:
            return http.post(path or "/", body, headers)
        except HttpError as failure:
            raise OSError(failure.kind) from None
        finally:
            http.close()
    import httpx

    try:
        with httpx.Client(timeout=timeout, verify=url.startswith("https://")) as client:
            response = client.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise OSError(type(exc).__name__) from None
    return response.status_code, response.content


def grant_token(path: str, timeout: float = 10.0, *, force: bool = False) -> tuple[str, Any]:
    """The grant's access token, refreshed when stale (``GrantError`` when it cannot be)."""
    from taskcore.agentsetup.grant import current_token

    def send(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        return post(url, body, headers, timeout)

    return current_token(path, send, now_ms, force=force)


def mcp_call(url: str, token: str, tool: str, timeout: float = 10.0) -> tuple[int, Any]:
    """One ``tools/call`` of ``tool`` at ``<url>/mcp``: ``(HTTP status, tool answer or None)``.

    ``ValueError`` names a refused call (the tool's error code); ``OSError`` no answer.
    """
    from taskcore.agentsetup.sessionstart import mcp_request, mcp_result, parse

    path, body, headers = mcp_request(token, tool)
    status, content = post(url.rstrip("/") + path, body, headers, timeout)
    if status != 200:
        return status, None
    return status, mcp_result(parse(content))
