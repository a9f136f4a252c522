"""Running the application under uvicorn, with a graceful stop.

:func:`serve` binds the listening socket itself (so ``port=0`` picks a free port and the
caller learns it before the first request), then runs uvicorn on it. SIGTERM and SIGINT make
uvicorn stop accepting, let every in-flight request finish (each is one journal transaction
that either committed before its response was sent or did not happen), then run the
lifespan shutdown. :class:`BackgroundServer` runs the same thing in a thread for tests and
benchmarks. Both run uvicorn's httptools protocol under :func:`taskhttp.limits.guarded_protocol`
(header and body deadlines, the connection cap with its health reserve) and without
WebSocket support (nothing here speaks it).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from taskhttp.limits import TransportLimits, guarded_protocol
from taskhttp.openapi import HEALTH_ALIASES, HEALTH_PATH

__all__ = ["GRACEFUL_SHUTDOWN_SECONDS", "BackgroundServer", "address_of", "bind", "serve"]

GRACEFUL_SHUTDOWN_SECONDS = 30
"""How long a stopping server waits for in-flight requests before closing them (ours)."""

LISTEN_BACKLOG = 2048
"""Connections the kernel queues for accepting (ours)."""

ACCEPT_BATCH = 16
"""Connections the event loop accepts in one go before their protocols run (ours).

asyncio uses the server's backlog for both the ``listen()`` queue and this batch; every
connection of a batch holds a descriptor before the connection cap can turn it away, so a
batch of 2048 could exhaust the descriptors the cap keeps room for. The kernel queue is set
back to :data:`LISTEN_BACKLOG` once the server listens.
"""


def bind(host: str, port: int) -> socket.socket:
    """Return a listening TCP socket on ``host:port`` (``port=0``: any free port)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn that ends normally after a graceful stop instead of re-raising the signal.

    The caller then closes the journal and exits 0: SIGTERM is how a supervisor asks for a
    clean stop, and a clean stop is a success.
    """

    on_started: Callable[[], None] | None = None
    """Called once uvicorn listens with its signal handlers installed (then SIGTERM is a
    graceful stop, not the default kill)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start, then report readiness."""
        await super().startup(sockets=sockets)
        for sock in sockets or ():
            sock.listen(LISTEN_BACKLOG)  # asyncio listened with the accept batch
        if self.started and self.on_started is not None:
            self.on_started()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Begin the graceful stop; a second Ctrl-C forces it."""
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True


def _config(app: ASGIApp, log_level: str, limits: TransportLimits | None) -> uvicorn.Config:
    transport = limits or TransportLimits()
    return uvicorn.Config(
        app,
        http=guarded_protocol(transport, health_path=(HEALTH_PATH, *HEALTH_ALIASES)),
        ws="none",
        log_level=log_level,
        access_log=False,
        lifespan="on",
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=max(1, round(transport.keepalive_timeout)),
        backlog=ACCEPT_BATCH,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )


def address_of(sock: socket.socket) -> str:
    """Return ``http://host:port`` for a bound socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8787,
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
    limits: TransportLimits | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve ``app`` until SIGTERM/SIGINT; ``on_ready`` gets the URL once it is serving.

    ``limits`` are the transport's (see :mod:`taskhttp.limits`); pass the same to
    :func:`taskhttp.create_app`. ``sock`` is a socket :func:`bind` returned earlier (a caller
    that must know the port is free before it writes anything); without it ``host:port`` is
    bound here. Either way the socket is closed when serving ends.
    """
    if sock is None:
        sock = bind(host, port)
    try:
        server = _Server(_config(app, log_level, limits))
        if on_ready is not None:
            url = address_of(sock)
            server.on_started = lambda: on_ready(url)
        server.run(sockets=[sock])
    finally:
        sock.close()


class BackgroundServer:
    """uvicorn on an ephemeral loopback port in a daemon thread (tests, benchmarks).

    >>> from starlette.applications import Starlette
    >>> with BackgroundServer(Starlette()) as url:
    ...     url.startswith("http://127.0.0.1:")
    True
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        log_level: str = "warning",
        limits: TransportLimits | None = None,
    ) -> None:
        self.sock = bind(host, 0)
        self.url = address_of(self.sock)
        self.server = _Server(_config(app, log_level, limits))
        self._thread = threading.Thread(target=self._run, daemon=True, name="uvicorn")
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            asyncio.run(self.server.serve(sockets=[self.sock]))
        except BaseException as exc:  # reported by stop()
            self._error = exc

    def start(self) -> str:
        """Start serving; return the base URL once uvicorn has started."""
        self._thread.start()
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the server did not start: {self._error!r}")
            self._thread.join(0.01)
        return self.url

    def stop(self) -> None:
        """Stop gracefully (as on SIGTERM) and wait for the thread."""
        self.server.should_exit = True
        self._thread.join()
        self.sock.close()
        if self._error is not None:
            raise RuntimeError("the server failed") from self._error

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
