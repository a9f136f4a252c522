"""One structured log line per HTTP request, and a request id echoed in ``X-Request-Id``.

The id is the caller's ``X-Request-Id`` when it is a short safe token
(``[A-Za-z0-9._-]{1,64}``), else a fresh random one. The line names the method, the path
(never the query string), the status, the bytes sent, the duration and the client address;
never a header, a cookie, a body or a token. ``--log-format json`` makes it one JSON object.

>>> line = format_line({"request_id": "r1", "method": "GET", "path": "/x", "status": 200}, "text")
>>> line
'request_id=r1 method=GET path=/x status=200'
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sys
import time
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from taskcore.hosting import LOG_FORMATS

__all__ = [
    "LOG_FORMATS",
    "REQUEST_ID_HEADER",
    "RequestLogMiddleware",
    "format_line",
    "install_request_log",
]

REQUEST_ID_HEADER = "X-Request-Id"
_SAFE_ID = re.compile(rb"[A-Za-z0-9._-]{1,64}")
_log = logging.getLogger("agent_task.access")


def format_line(fields: dict[str, Any], fmt: str) -> str:
    """Render one request's fields as ``key=value`` text or one JSON object."""
    if fmt == "json":
        return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)
    return " ".join(
        f"{k}={json.dumps(v) if isinstance(v, str) and ' ' in v else v}" for k, v in fields.items()
    )


_ID_KEY = REQUEST_ID_HEADER.lower().encode("latin-1")


def install_request_log(name: str = "agent_task.access") -> logging.Logger:
    """Send logger ``name``'s lines to stderr as they are, unless it already has a handler.

    The request log (one preformatted line per request) and the server's own notices go to
    stderr whatever the ASGI server configured for its own loggers; a deployment that
    configured ``name`` itself keeps its handlers.
    """
    log = logging.getLogger(name)
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


class _Clock:
    """The log line's UTC timestamp, formatted once per second."""

    def __init__(self) -> None:
        self.second = -1
        self.text = ""

    def now(self) -> str:
        second = int(time.time())
        if second != self.second:
            self.text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
            self.second = second
        return self.text


def _request_id(scope: Scope) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == b"x-request-id" and _SAFE_ID.fullmatch(value):
            return bytes(value).decode("ascii")
    return secrets.token_hex(8)


class RequestLogMiddleware:
    """Pure ASGI middleware: adds the request id header and logs one line per request."""

    def __init__(
        self, app: ASGIApp, *, fmt: str = "text", logger: logging.Logger | None = None
    ) -> None:
        if fmt not in LOG_FORMATS:
            raise ValueError(f"log format must be one of {LOG_FORMATS}")
        self.app = app
        self.fmt = fmt
        self.log = logger or _log
        self._clock = _Clock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI call; HTTP requests get an id header and a log line."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        started = time.perf_counter()
        status = 500
        sent = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status, sent
            kind = message["type"]
            if kind == "http.response.body":
                sent += len(message.get("body", b""))
            elif kind == "http.response.start":
                status = int(message["status"])
                headers = message.get("headers", ())
                if all(k != _ID_KEY for k, _ in headers):  # a new list: never the response's
                    message["headers"] = [*headers, (_ID_KEY, request_id.encode("latin-1"))]
                else:  # an id header to replace, in place
                    MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if self.log.isEnabledFor(logging.INFO):
                self._emit(scope, request_id, status, sent, started)

    def _emit(self, scope: Scope, request_id: str, status: int, sent: int, started: float) -> None:
        client = scope.get("client")
        fields = {
            "ts": self._clock.now(),
            "request_id": request_id,
            "method": str(scope.get("method", ""))[:16],
            "path": str(scope.get("path", ""))[:256],
            "status": status,
            "bytes": sent,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "client": client[0] if client else None,
        }
        self.log.info(format_line(fields, self.fmt))
