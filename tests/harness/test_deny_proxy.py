"""The deny-all proxy: every attempt is refused and remembered, nothing passes through."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.harness.deny_proxy import DenyProxy


def test_an_https_client_through_the_proxy_is_refused_and_seen():
    with DenyProxy() as proxy:
        with httpx.Client(proxy=proxy.url, timeout=5) as client, pytest.raises(httpx.ProxyError):
            client.get("https://registry.example.invalid/x")
        proxy.wait_quiet()
    assert proxy.seen == ["CONNECT registry.example.invalid:443 HTTP/1.1"]


def test_a_plain_http_request_is_refused_with_403_and_seen():
    with DenyProxy() as proxy:
        with httpx.Client(proxy=proxy.url, timeout=5) as client:
            response = client.get("http://telemetry.example.invalid/v1/events")
        proxy.wait_quiet()
    assert response.status_code == 403
    assert proxy.seen == ["GET http://telemetry.example.invalid/v1/events HTTP/1.1"]


def test_a_connection_that_says_nothing_is_still_recorded():
    with DenyProxy() as proxy:
        s = socket.create_connection(("127.0.0.1", proxy.port))
        s.shutdown(socket.SHUT_WR)
        s.recv(100)
        s.close()
        proxy.wait_quiet()
    assert proxy.seen == ["(no request line)"]


def test_nothing_seen_when_nothing_connects():
    with DenyProxy() as proxy:
        proxy.wait_quiet()
    assert proxy.seen == []
