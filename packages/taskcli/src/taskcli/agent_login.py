"""``agent-task agent login``: the CLI's own OAuth grant, as a native app (RFC 8252).

The steps, against the service at ``--url``:

1. discovery: ``<url>/.well-known/oauth-protected-resource/mcp`` (RFC 9728) names the
   authorization server; its ``/.well-known/oauth-authorization-server`` (RFC 8414) the
   endpoints;
2. a loopback listener on ``127.0.0.1`` with a port the system picks (RFC 8252 7.3);
3. dynamic client registration (RFC 7591) at the server's ``registration_endpoint``: a public
   client (``token_endpoint_auth_method`` ``none``) whose one redirect URI is the listener's
   (the server matches redirect URIs exactly, so each login registers its own);
4. the authorization request with PKCE S256, a random ``state`` and ``resource`` = the MCP
   endpoint; the browser opens it (or the URL is printed: ``--no-browser``); the person
   consents on the board (or an operator with ``agent-task admin oauth approve``);
5. the redirect to the listener (or, from a browser on another machine, its URL pasted on
   stdin with ``--no-browser``): ``state`` must match, ``iss`` (RFC 9207) must be the issuer;
6. the code is exchanged (with the verifier) and the grant written, mode 0600
   (:mod:`taskcore.agentsetup.grant`).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import secrets
import socket
import sys
import time
from collections.abc import Callable
from typing import IO, Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from taskcore.agentsetup.grant import GRANT_VERSION, save, updated
from taskcore.errors import ErrorCode, TaskError

__all__ = ["LOGIN_SCOPE", "eprint", "login"]

LOGIN_SCOPE = "agent-task:read agent-task:write"
"""What the hooks need: read their leases (and, later, what an agent does)."""

_CALLBACK = "/callback"
_PAGE = (
    "<!doctype html><meta charset=utf-8><title>agent-task</title>"
    "<p>{}</p><p>You can close this tab.</p>"
)


def _json(response: httpx.Response, what: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.status_code >= 400 or not isinstance(data, dict):
        detail = (
            (data.get("error_description") or data.get("error")) if isinstance(data, dict) else None
        )
        raise TaskError(
            ErrorCode.SERVICE_UNREACHABLE
            if response.status_code >= 500
            else ErrorCode.INVALID_VALUE,
            f"{what} answered HTTP {response.status_code}"
            + (f": {str(detail)[:200]}" if detail else ""),
        )
    return data


def _discover(client: httpx.Client, url: str) -> tuple[str, dict[str, Any]]:
    """The resource (the MCP endpoint) and the authorization server's metadata."""
    resource = url + "/mcp"
    try:
        prm = _json(
            client.get(url + "/.well-known/oauth-protected-resource/mcp"),
            "the protected-resource metadata",
        )
        servers = prm.get("authorization_servers")
        issuer = str(servers[0]).rstrip("/") if isinstance(servers, list) and servers else url
        resource = str(prm.get("resource") or resource)
        metadata = _json(
            client.get(issuer + "/.well-known/oauth-authorization-server"),
            "the authorization server metadata",
        )
    except httpx.HTTPError as exc:
        raise TaskError(
            ErrorCode.SERVICE_UNREACHABLE, f"{url} did not answer ({type(exc).__name__})"
        ) from None
    for key in ("issuer", "authorization_endpoint", "token_endpoint"):
        if not isinstance(metadata.get(key), str):
            raise TaskError(ErrorCode.INVALID_VALUE, f"the server's OAuth metadata has no {key}")
    if not isinstance(metadata.get("registration_endpoint"), str):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "the server offers no dynamic client registration; use --token-file instead",
        )
    if "S256" not in (metadata.get("code_challenge_methods_supported") or ["S256"]):
        raise TaskError(ErrorCode.INVALID_VALUE, "the server does not offer PKCE S256")
    return resource, metadata


class _Listener(http.server.HTTPServer):
    """One loopback listener; :attr:`params` is the query of the first ``/callback`` hit."""

    params: dict[str, str] | None = None


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Listener

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != _CALLBACK:
            self.send_error(404)
            return
        params = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if self.server.params is None:
            self.server.params = params
        ok = "code" in params
        text = "agent-task: signed in." if ok else "agent-task: the sign-in was not completed."
        page = _PAGE.format(text).encode()
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _wait(
    listener: _Listener, redirect: str, paste: IO[str] | None, timeout_s: float
) -> dict[str, str] | None:
    """The redirect's query: from the listener, or a URL pasted on ``paste``."""
    import select

    deadline = time.monotonic() + timeout_s
    watched: list[Any] = [listener.socket] + ([paste] if paste is not None else [])
    while listener.params is None and time.monotonic() < deadline:
        ready, _, _ = select.select(watched, [], [], 0.5)
        if listener.socket in ready:
            listener.handle_request()
        if paste is not None and paste in ready:
            line = paste.readline()
            if not line:
                watched.remove(paste)  # end of input: the listener alone
                paste = None
                continue
            parts = urlsplit(line.strip())
            if f"{parts.scheme}://{parts.netloc}{parts.path}" == redirect:
                return {k: v[0] for k, v in parse_qs(parts.query).items()}
    return listener.params


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def login(
    url: str,
    grant_file: str,
    *,
    open_browser: bool,
    timeout_s: float,
    say: Callable[[str], None],
    client_name: str | None = None,
    paste: IO[str] | None = None,
) -> dict[str, Any]:
    """Run the flow; write the grant to ``grant_file``; return it.

    ``paste``: a stream the person may paste the redirect URL into instead (a browser on
    another machine cannot reach this one's loopback listener).
    """
    with httpx.Client(timeout=30.0, verify=url.startswith("https://")) as client:
        resource, metadata = _discover(client, url)
        issuer = str(metadata["issuer"]).rstrip("/")
        listener = _Listener(("127.0.0.1", 0), _Handler)
        try:
            listener.timeout = 0.5
            redirect = f"http://127.0.0.1:{listener.server_address[1]}{_CALLBACK}"
            name = client_name or f"agent-task hooks on {socket.gethostname()[:64]}"
            try:
                registered = _json(
                    client.post(
                        str(metadata["registration_endpoint"]),
                        json={
                            "client_name": name,
                            "redirect_uris": [redirect],
                            "grant_types": ["authorization_code", "refresh_token"],
                            "response_types": ["code"],
                            "token_endpoint_auth_method": "none",
                            "scope": LOGIN_SCOPE,
                        },
                    ),
                    "the client registration",
                )
            except httpx.HTTPError as exc:
                raise TaskError(
                    ErrorCode.SERVICE_UNREACHABLE,
                    f"the registration did not answer ({type(exc).__name__})",
                ) from None
            client_id = str(registered.get("client_id") or "")
            if not client_id:
                raise TaskError(ErrorCode.INVALID_VALUE, "the registration gave no client_id")
            verifier = secrets.token_urlsafe(48)
            state = secrets.token_urlsafe(24)
            authorize = (
                str(metadata["authorization_endpoint"])
                + "?"
                + urlencode(
                    {
                        "response_type": "code",
                        "client_id": client_id,
                        "redirect_uri": redirect,
                        "code_challenge": _challenge(verifier),
                        "code_challenge_method": "S256",
                        "state": state,
                        "scope": LOGIN_SCOPE,
                        "resource": resource,
                    }
                )
            )
            say(f"Approve agent-task's access in your browser:\n{authorize}")
            if paste is not None:
                say(
                    "(On another machine? After approving, paste here the URL the browser "
                    "was sent to.)"
                )
            if open_browser:
                import webbrowser

                webbrowser.open(authorize)
            params = _wait(listener, redirect, paste, timeout_s)
        finally:
            listener.server_close()
        if params is None:
            raise TaskError(
                ErrorCode.CALL_TIMED_OUT,
                f"no answer from the browser within {int(timeout_s)} s; run login again",
            )
        if not secrets.compare_digest(params.get("state", ""), state):
            raise TaskError(
                ErrorCode.INVALID_VALUE, "the redirect's state does not match: login refused"
            )
        if "error" in params:
            raise TaskError(
                ErrorCode.FORBIDDEN,
                f"the authorization was refused ({params['error'][:60]}): "
                f"{params.get('error_description', '')[:200]}".rstrip(": "),
            )
        if "iss" in params and params["iss"].rstrip("/") != issuer:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"the redirect names another issuer ({params['iss'][:200]}): login refused",
            )
        code = params.get("code")
        if not code:
            raise TaskError(ErrorCode.INVALID_VALUE, "the redirect carries no code")
        try:
            answer = _json(
                client.post(
                    str(metadata["token_endpoint"]),
                    data={
                        "grant_type": "authorization_code",
                        "code": code,
                        "redirect_uri": redirect,
                        "client_id": client_id,
                        "code_verifier": verifier,
                        "resource": resource,
                    },
                ),
                "the token endpoint",
            )
        except httpx.HTTPError as exc:
            raise TaskError(
                ErrorCode.SERVICE_UNREACHABLE,
                f"the token endpoint did not answer ({type(exc).__name__})",
            ) from None
    if not isinstance(answer.get("refresh_token"), str):
        raise TaskError(ErrorCode.INVALID_VALUE, "the token endpoint gave no refresh token")
    base = {
        "version": GRANT_VERSION,
        "url": url,
        "issuer": issuer,
        "tokenEndpoint": str(metadata["token_endpoint"]),
        "resource": resource,
        "clientId": client_id,
        "scope": LOGIN_SCOPE,
        "accessToken": "",
        "refreshToken": "",
        "expiresAtMs": 0,
    }
    from taskcore.agentsetup.grant import GrantError

    try:
        grant = updated(base, answer, time.time_ns() // 1_000_000)
    except GrantError as err:
        raise TaskError(ErrorCode.INVALID_VALUE, str(err)) from None
    save(grant_file, grant)
    return grant


def eprint(text: str) -> None:
    """Print to stderr (the URL, while stdout stays for the result)."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
