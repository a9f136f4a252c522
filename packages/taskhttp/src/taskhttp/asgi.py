"""The service as an ASGI application, for any ASGI server.

::

    uvicorn taskhttp.asgi:app --http taskhttp.asgi:Protocol   # with every transport bound
    uvicorn taskhttp.asgi:create_asgi_app --factory
    hypercorn taskhttp.asgi:app
    gunicorn -k uvicorn_worker.UvicornWorker taskhttp.asgi:app

:data:`app` is the service ``agent-task serve`` runs, configured from the same environment
(:mod:`taskcore.hosting`: ``AGENT_TASK_DATA_DIR``, ``AGENT_TASK_DATABASE``, and a variable
for each of ``serve``'s limits). Importing this module reads and opens nothing: the ASGI
lifespan's startup reads the settings, opens the journal (creating it on a fresh data dir)
and the service, starts the retention sweep and the forge-status delivery worker, and its
shutdown stops them and closes the service. A server without the lifespan gets 503
``STORAGE_UNAVAILABLE`` saying so. Each worker process of a multi-worker server is one
service on the same journal, as replicas are (docs/deploy.md).

The first admin token is never made here: a journal without a live admin token is logged
with the exact ``agent-task admin token create`` command to run.

What bounds a request, and where:

* in the application, under any server: the body size of each route, the body bytes all
  requests hold at once (``AGENT_TASK_MAX_BODY_BYTES``) and the time a body may take once its
  headers are in (``AGENT_TASK_BODY_TIMEOUT``, :class:`taskhttp.body.BodyDeadline`);
* in the server's protocol, out of an application's reach: the time and bytes a request's
  headers may take and the connection cap with its health reserve. Under uvicorn,
  ``--http taskhttp.asgi:Protocol`` runs ``agent-task serve``'s own protocol
  (:func:`taskhttp.limits.guarded_protocol`) with these settings; under any other server they
  are the deployer's to set (docs/deploy.md, "Any ASGI server"), and the startup logs a
  warning saying so.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send
from taskcore import ErrorCode, TaskError
from taskcore.hosting import Host, HostSettings, admin_token_command
from taskmcp.family import error_response
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from taskhttp.app import create_app
from taskhttp.body import BodyDeadline
from taskhttp.limits import TransportLimits, guarded_protocol
from taskhttp.openapi import HEALTH_ALIASES, HEALTH_PATH
from taskhttp.requestlog import install_request_log

__all__ = ["AsgiApp", "app", "create_asgi_app"]

LOG_NAME = "agent_task.asgi"
"""The logger of the application's start and stop notices (stderr unless configured)."""

_protocol: type[HttpToolsProtocol] | None = None


class AsgiApp:
    """The service as an ASGI application, started and stopped by the ASGI lifespan.

    ``settings`` default to the environment's, read at startup (:meth:`HostSettings.load`).
    """

    def __init__(self, settings: HostSettings | None = None) -> None:
        self.settings = settings
        self.host: Host | None = None
        self._inner: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the lifespan, or hand a connection to the running service."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        inner = self._inner
        if inner is None:
            if scope["type"] == "http":
                err = TaskError(
                    ErrorCode.STORAGE_UNAVAILABLE,
                    "the journal is not open: this application opens it in the ASGI lifespan; "
                    "run the server with the lifespan on (uvicorn --lifespan on)",
                )
                await error_response(err)(scope, receive, send)
            return
        await inner(scope, receive, send)

    def _start(self) -> tuple[Host, Starlette]:
        settings = self.settings or HostSettings.load()
        host = Host(settings).start()
        try:
            limits = TransportLimits.from_settings(settings)
            inner = create_app(
                host.service,
                log_format=settings.log_format,
                board_secure=settings.board_secure_cookies or None,
                limits=limits,
                public_url=settings.public_url,
                oauth_allow_private_client_urls=settings.oauth_allow_private_client_urls,
            )
        except BaseException:
            host.stop()
            raise
        install_request_log()
        _notices(host, limits)
        return host, inner

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        started = False
        try:
            host, inner = await anyio.to_thread.run_sync(self._start)
            try:
                # The inner application's own lifespan: the MCP endpoints' task group and the
                # worker threads of its handlers.
                async with inner.router.lifespan_context(inner):
                    self.host = host
                    self._inner = BodyDeadline(inner, host.settings.body_timeout)
                    await send({"type": "lifespan.startup.complete"})
                    started = True
                    message = await receive()
                    self._inner = None
            finally:
                self.host = None
                await anyio.to_thread.run_sync(host.stop)
                if started:
                    install_request_log(LOG_NAME).info("agent-task: stopped")
        except Exception as exc:
            if started:
                raise
            text = (
                f"{exc.describe()} [{exc.code.value}]" if isinstance(exc, TaskError) else repr(exc)
            )
            await send({"type": "lifespan.startup.failed", "message": f"agent-task: {text}"})
            return
        if message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})


def _notices(host: Host, limits: TransportLimits) -> None:
    log = install_request_log(LOG_NAME)
    settings = host.settings
    log.info("agent-task: ASGI app on the journal of data dir %s", settings.data_dir)
    if not host.has_admin_token:
        log.warning(
            "agent-task: the journal has no admin token; create one (in this environment, so "
            "the same journal) with: %s",
            admin_token_command(settings.data_dir),
        )
    if _protocol is None:
        log.warning(
            "agent-task: request headers and connections are bounded by the server, not this "
            "app: under uvicorn pass --http taskhttp.asgi:Protocol; otherwise limit headers to "
            "%d bytes and %g s and connections to %d in the server or a proxy "
            "(docs/deploy.md, 'Any ASGI server')",
            limits.header_bytes,
            limits.header_timeout,
            limits.connections(),
        )


def create_asgi_app(settings: HostSettings | None = None) -> AsgiApp:
    """A new application (``uvicorn taskhttp.asgi:create_asgi_app --factory``).

    >>> isinstance(create_asgi_app(), AsgiApp)
    True
    """
    return AsgiApp(settings)


app = AsgiApp()
"""The application for ``uvicorn taskhttp.asgi:app`` and every other ASGI server."""


def __getattr__(name: str) -> Any:
    """``Protocol``: uvicorn's httptools protocol under ``serve``'s transport bounds.

    Built on first use from the environment's settings (``--http taskhttp.asgi:Protocol``),
    one class per process, so the connections of one server share one cap.
    """
    global _protocol
    if name == "Protocol":
        if _protocol is None:
            limits = TransportLimits.from_settings(HostSettings.load())
            _protocol = guarded_protocol(limits, health_path=(HEALTH_PATH, *HEALTH_ALIASES))
        return _protocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
