"""Slow clients cannot hold the service (issue 10, item 2).

The attack: 200 connections sending one header line every 5 s stayed open for 75 s and more;
with a 256-descriptor limit, 260 of them locked every other client out. Here: 300 connections
that trickle header lines against a server limited to 256 descriptors, with a 4 s header
deadline. A normal client's calls still answer within 2 s, and every slow connection is
closed within the deadline.
"""

from __future__ import annotations

import contextlib
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from tests.adversarial.served import Served

SLOW = 300
HEADER_TIMEOUT = 4.0
DRIP_SECONDS = 1.0


class Trickle:
    """Many connections, each sending one more header line every ``DRIP_SECONDS``."""

    def __init__(self, url: str, n: int) -> None:
        parts = urlsplit(url)
        self.start = time.monotonic()
        self.open: dict[int, socket.socket] = {}
        self.closed_at: dict[int, float] = {}
        for i in range(n):
            sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
            sock.sendall(b"POST /v/agenttask.list HTTP/1.1\r\nHost: x\r\n")
            sock.setblocking(False)
            self.open[i] = sock
        self.lines = 0

    def poll(self) -> None:
        """Notice connections the server closed."""
        for i, sock in list(self.open.items()):
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                self.closed_at[i] = time.monotonic() - self.start
                sock.close()
                del self.open[i]

    def drip(self) -> None:
        self.lines += 1
        for i, sock in list(self.open.items()):
            with contextlib.suppress(OSError):
                sock.send(f"X-Slow-{self.lines}: {i}\r\n".encode())

    def run_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        next_drip = time.monotonic()
        while time.monotonic() < end and self.open:
            if time.monotonic() >= next_drip:
                self.drip()
                next_drip += DRIP_SECONDS
            self.poll()
            time.sleep(0.05)

    def close(self) -> None:
        for sock in self.open.values():
            sock.close()


@pytest.mark.slow
def test_slow_header_connections_neither_lock_out_clients_nor_stay_open(tmp_path):
    served = Served(tmp_path / "data", "--header-timeout", str(HEADER_TIMEOUT), descriptors=256)
    token = served.admin
    trickle = Trickle(served.url, SLOW)
    try:
        trickle.run_for(1.5)
        # A normal client, while the slow ones hold their connections.
        with httpx.Client(base_url=served.url, timeout=2.0) as client:
            began = time.monotonic()
            health = client.get("/v1/hub/health")
            call = client.post(
                "/v/agenttask.list",
                content=b"{}",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            took = time.monotonic() - began
        assert health.status_code == 200
        assert call.status_code == 200, call.text
        assert took < 2.0
        trickle.run_for(HEADER_TIMEOUT + 3.0)
        assert trickle.open == {}, f"{len(trickle.open)} slow connections still open"
        assert max(trickle.closed_at.values()) <= HEADER_TIMEOUT + 2.0
    finally:
        trickle.close()
        assert served.stop() == 0
    assert "Traceback" not in served.log()


@pytest.mark.slow
def test_a_slow_body_is_cut_off_at_the_body_deadline(tmp_path):
    served = Served(tmp_path / "data", "--body-timeout", "2")
    parts = urlsplit(served.url)
    try:
        sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
        sock.sendall(
            b"POST /v/agenttask.list HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + served.admin.encode() + b"\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        began = time.monotonic()
        closed = False
        while time.monotonic() - began < 8:
            with contextlib.suppress(OSError):
                sock.sendall(b" ")
            try:
                sock.settimeout(0.5)
                if sock.recv(4096) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
        assert closed
        assert time.monotonic() - began < 2.0 + 2.0
        sock.close()
    finally:
        assert served.stop() == 0
