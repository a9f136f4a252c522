"""A deny-all HTTP(S) proxy on 127.0.0.1 that remembers every connection it was offered.

The harness tests put it in ``HTTPS_PROXY``/``HTTP_PROXY`` (``NO_PROXY`` names 127.0.0.1 and
localhost, where the scripted model and our service listen). Anything a harness tries to reach
elsewhere (telemetry, update checks, plugin catalogues, a real model) comes here, is refused
with ``403`` and is recorded; a test then asserts :attr:`DenyProxy.seen` is empty. The machine
could not reach those hosts anyway; the proxy turns a silent attempt into a failing assertion.

>>> import socket
>>> with DenyProxy() as proxy:
...     s = socket.create_connection(("127.0.0.1", proxy.port))
...     s.sendall(b"CONNECT api.example.com:443 HTTP/1.1\\r\\nHost: api.example.com\\r\\n\\r\\n")
...     reply = s.recv(100)
...     s.close()
...     proxy.wait_quiet()
>>> reply.split(b"\\r\\n")[0], proxy.seen
(b'HTTP/1.1 403 Forbidden', ['CONNECT api.example.com:443 HTTP/1.1'])
"""

from __future__ import annotations

import socket
import threading
import time

__all__ = ["DenyProxy"]


class DenyProxy:
    """Accept, record the request line, answer 403, close."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._open = 0

    @property
    def port(self) -> int:
        """The port it listens on."""
        assert self._sock is not None, "start the proxy first"
        return int(self._sock.getsockname()[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        """Listen on an ephemeral port of 127.0.0.1; return the proxy URL."""
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, name="deny-proxy", daemon=True)
        self._thread.start()
        return self.url

    def _serve(self) -> None:
        sock = self._sock
        while sock is not None and self._sock is sock:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._open += 1
            threading.Thread(target=self._deny, args=(conn,), daemon=True).start()

    def _deny(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            data = b""
            while b"\n" not in data and len(data) < 8192:
                chunk = conn.recv(1024)
                if not chunk:
                    break
                data += chunk
            line = data.split(b"\n", 1)[0].decode("latin-1").strip() or "(no request line)"
            with self._lock:
                self.seen.append(line)
            conn.sendall(
                b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
        except OSError:
            with self._lock:
                self.seen.append("(a connection that sent no request line)")
        finally:
            conn.close()
            with self._lock:
                self._open -= 1

    def wait_quiet(self, timeout: float = 5.0) -> None:
        """Wait until every accepted connection has been answered."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._open == 0:
                    return
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop listening (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> DenyProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
