"""``agent-task serve --workers N``: N server processes on one listening socket.

The supervisor (:class:`Supervisor`, the process ``serve`` runs in) binds the port, prepares
the journal once (migrations, the first admin token) and starts N worker processes, each
``python -m taskhttp.workers``. A worker inherits the listening socket's descriptor (the
kernel hands each accepted connection to one of the processes waiting on it: no
``SO_REUSEPORT`` needed, so it works wherever ``fork``/``exec`` pass descriptors) and reads
its :class:`WorkerSpec` (JSON) from its standard input. Each worker is a whole service on the same
journal: its own :class:`taskcore.hosting.Host` (its own SQLite connections or PostgreSQL
pool, retention schedule, delivery workers) and its own uvicorn, exactly as the replicas of
``docs/deploy.md`` are. What is right across them and what holds per worker is in
``docs/deploy.md``, "Workers in one server".

The supervisor:

* prints ``serving URL`` once every worker listens; a worker that exits before it listens
  (a journal it cannot open, a bad setting) stops the others and ``serve`` exits with that
  worker's status, its message on stderr;
* restarts a worker that dies after it listened (a crash, an OOM kill), saying so on stderr,
  at most :data:`RESTARTS_MAX` times in :data:`RESTART_WINDOW_SECONDS`; past that it stops
  every worker and exits 1, saying so (a crash loop is the operator's to look at, not the
  supervisor's to hide);
* on SIGTERM or SIGINT sends SIGTERM to every worker (each stops gracefully: stops accepting,
  lets in-flight requests finish, closes its journal), waits for them
  (:data:`STOP_GRACE_SECONDS`, then SIGKILL) and exits 0.

A worker whose supervisor is gone (killed with SIGKILL) stops itself gracefully within a
second: it watches its parent process.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import attrs
from taskcore import ErrorCode, TaskError
from taskcore.hosting import Host, HostSettings

from taskhttp.app import create_app
from taskhttp.limits import TransportLimits
from taskhttp.requestlog import install_request_log
from taskhttp.server import GRACEFUL_SHUTDOWN_SECONDS, serve

__all__ = [
    "RESTARTS_MAX",
    "RESTART_WINDOW_SECONDS",
    "STOP_GRACE_SECONDS",
    "WORKERS_MAX",
    "Supervisor",
    "WorkerSpec",
    "run_host",
]

WORKERS_MAX = 64
"""The most worker processes one ``serve`` runs (ours; size N by docs/deploy.md)."""

RESTARTS_MAX = 5
"""Restarts of dead workers allowed within :data:`RESTART_WINDOW_SECONDS` (ours)."""

RESTART_WINDOW_SECONDS = 60.0
"""The window :data:`RESTARTS_MAX` counts restarts in (ours)."""

STOP_GRACE_SECONDS = GRACEFUL_SHUTDOWN_SECONDS + 5
"""How long a stopping supervisor waits for its workers before killing them (ours)."""

READY = b"R"
"""What a worker writes on its readiness pipe once it listens."""


@attrs.frozen(kw_only=True)
class WorkerSpec:
    """What a worker process needs: sent as JSON on its standard input by its supervisor."""

    settings: HostSettings
    listen_fd: int
    ready_fd: int
    log_level: str
    index: int

    def dumps(self) -> bytes:
        """The spec as JSON."""
        settings = attrs.asdict(self.settings, recurse=False)
        settings["data_dir"] = str(self.settings.data_dir)
        settings["session_gate_workspaces"] = sorted(self.settings.session_gate_workspaces)
        spec = attrs.asdict(self, recurse=False)
        spec["settings"] = settings
        return json.dumps(spec).encode()

    @classmethod
    def loads(cls, data: bytes) -> WorkerSpec:
        """The spec :meth:`dumps` wrote.

        >>> import pathlib
        >>> settings = HostSettings.load(data_dir=pathlib.Path("/d"), environ={})
        >>> spec = WorkerSpec(settings=settings, listen_fd=3, ready_fd=4, log_level="info", index=1)
        >>> WorkerSpec.loads(spec.dumps()) == spec
        True
        """
        spec = json.loads(data)
        given = spec.pop("settings")
        given["data_dir"] = Path(given["data_dir"])
        given["session_gate_workspaces"] = frozenset(given["session_gate_workspaces"])
        return cls(settings=HostSettings(**given), **spec)


def run_host(
    host: Host,
    sock: socket.socket,
    *,
    log_level: str,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``host``'s service on the listening ``sock`` until SIGTERM/SIGINT."""
    settings = host.settings
    limits = TransportLimits.from_settings(settings)
    app = create_app(
        host.service,
        log_format=settings.log_format,
        board_secure=settings.board_secure_cookies or None,
        limits=limits,
        public_url=settings.public_url,
        oauth_allow_private_client_urls=settings.oauth_allow_private_client_urls,
    )
    serve(app, on_ready=on_ready, log_level=log_level, limits=limits, sock=sock)


def _watch_parent(parent: int) -> None:
    """Stop this worker gracefully once its supervisor is gone (re-parented)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)


def worker_main() -> int:
    """A worker process: read its spec, open its own host, serve the inherited socket."""
    spec = WorkerSpec.loads(sys.stdin.buffer.read())
    sock = socket.socket(fileno=spec.listen_fd)
    ready = os.fdopen(spec.ready_fd, "wb", buffering=0)
    threading.Thread(
        target=_watch_parent, args=(os.getppid(),), daemon=True, name="parent-watch"
    ).start()
    try:
        host = Host(spec.settings).start()
    except TaskError as err:
        print(
            f"agent-task: worker {spec.index}: {err.describe()} [{err.code.value}]",
            file=sys.stderr,
            flush=True,
        )
        return err.code.kind.exit_status
    install_request_log()

    def on_ready(_url: str) -> None:
        ready.write(READY)
        ready.close()

    try:
        run_host(host, sock, log_level=spec.log_level, on_ready=on_ready)
    finally:
        host.stop()
    return 0


@attrs.define
class _Worker:
    index: int
    process: subprocess.Popen[bytes]
    ready_fd: int | None
    listening: bool = False


class Supervisor:
    """Start, watch, restart and stop the worker processes of one ``serve`` (see the module).

    ``say`` reports on stderr (one line each: a worker started, died, restarted).
    """

    def __init__(
        self,
        sock: socket.socket,
        settings: HostSettings,
        *,
        workers: int,
        log_level: str,
        say: Callable[[str], None],
    ) -> None:
        if not 1 <= workers <= WORKERS_MAX:
            raise TaskError(
                ErrorCode.INVALID_VALUE, f"--workers must be 1 to {WORKERS_MAX}, not {workers}"
            )
        self.sock = sock
        self.settings = settings
        self.count = workers
        self.log_level = log_level
        self.say = say
        self._workers: dict[int, _Worker] = {}
        self._restarts: deque[float] = deque()
        self._stopping = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)

    def _spawn(self, index: int) -> _Worker:
        ready_r, ready_w = os.pipe()
        spec = WorkerSpec(
            settings=self.settings,
            listen_fd=self.sock.fileno(),
            ready_fd=ready_w,
            log_level=self.log_level,
            index=index,
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "taskhttp.workers"],
            stdin=subprocess.PIPE,
            pass_fds=(self.sock.fileno(), ready_w),
            start_new_session=False,
        )
        os.close(ready_w)
        assert process.stdin is not None
        process.stdin.write(spec.dumps())
        process.stdin.close()
        self.say(f"agent-task: worker {index} started (pid {process.pid})")
        return _Worker(index=index, process=process, ready_fd=ready_r)

    def _on_signal(self, _sig: int, _frame: FrameType | None) -> None:
        self._stopping = True
        with contextlib.suppress(OSError):  # the pipe is full: a wake-up is pending anyway
            os.write(self._wake_w, b"x")

    def run(self, on_ready: Callable[[], None]) -> int:
        """Run until SIGTERM/SIGINT (0) or a worker that cannot be kept running (its status)."""
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            for index in range(1, self.count + 1):
                self._workers[index] = self._spawn(index)
            return self._watch(on_ready)
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _watch(self, on_ready: Callable[[], None]) -> int:
        announced = False
        while not self._stopping:
            waiting = [w.ready_fd for w in self._workers.values() if w.ready_fd is not None]
            try:
                readable, _, _ = select.select([self._wake_r, *waiting], [], [], 0.2)
            except InterruptedError:
                continue
            for worker in self._workers.values():
                if worker.ready_fd is not None and worker.ready_fd in readable:
                    if os.read(worker.ready_fd, 1) == READY:
                        worker.listening = True
                    os.close(worker.ready_fd)
                    worker.ready_fd = None
            if not announced and all(w.listening for w in self._workers.values()):
                announced = True
                on_ready()
            status = self._reap()
            if status is not None:
                return status
        return 0

    def _reap(self) -> int | None:
        """Restart workers that died after listening; a status to exit with, or ``None``."""
        for index, worker in list(self._workers.items()):
            code = worker.process.poll()
            if code is None or self._stopping:
                continue
            if worker.ready_fd is not None:
                os.close(worker.ready_fd)
                worker.ready_fd = None
            how = f"signal {-code}" if code < 0 else f"status {code}"
            if not worker.listening:
                self.say(
                    f"agent-task: worker {index} (pid {worker.process.pid}) exited with {how} "
                    "before it listened; stopping"
                )
                del self._workers[index]
                return code if code > 0 else 1
            now = time.monotonic()
            while self._restarts and now - self._restarts[0] > RESTART_WINDOW_SECONDS:
                self._restarts.popleft()
            if len(self._restarts) >= RESTARTS_MAX:
                self.say(
                    f"agent-task: worker {index} (pid {worker.process.pid}) exited with {how}; "
                    f"{RESTARTS_MAX} restarts in {RESTART_WINDOW_SECONDS:g} s already, "
                    "stopping (see the workers' messages above)"
                )
                del self._workers[index]
                return 1
            self._restarts.append(now)
            self.say(
                f"agent-task: worker {index} (pid {worker.process.pid}) exited with {how}; "
                "restarting it"
            )
            self._workers[index] = self._spawn(index)
        return None

    def _stop_all(self) -> None:
        workers = [w for w in self._workers.values() if w.process.poll() is None]
        for worker in workers:
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for worker in workers:
            try:
                worker.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(f"agent-task: worker {worker.index} did not stop in time; killing it")
                worker.process.kill()
                worker.process.wait()
        for worker in self._workers.values():
            if worker.ready_fd is not None:
                os.close(worker.ready_fd)
                worker.ready_fd = None
        self._workers.clear()


if __name__ == "__main__":
    sys.exit(worker_main())
