"""No body is read before authentication; body bytes in flight are bounded (issue 10, item 1).

The attack: 16 concurrent 16 MiB uploads with no token were each buffered whole before the
401 (server RSS +360-450 MB); ``/v/{verb}`` read its body before authenticating too.
"""

from __future__ import annotations

import http.client
import json
import threading
from urllib.parse import urlsplit

import pytest
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES

from tests.adversarial.served import Served

UPLOAD = "/v1/hub/workspace/repositories/acme/profiles/default/agent-tasks/collector-upload"
WORKFLOW = "/v1/hub/workspace/repositories/acme/profiles/default/agent-tasks"
MIB = 1024 * 1024


def _connect(url: str, timeout: float = 30) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def headers_only(url, path, length, content_type, token=None, timeout=5.0):
    """Send a request's headers declaring ``length`` body bytes, send no body, read the answer."""
    conn = _connect(url, timeout)
    try:
        conn.putrequest("POST", path, skip_accept_encoding=True)
        conn.putheader("Content-Type", content_type)
        conn.putheader("Content-Length", str(length))
        conn.putheader("Accept", "application/json, text/event-stream")
        if token is not None:
            conn.putheader("Authorization", f"Bearer {token}")
        conn.endheaders()
        response = conn.getresponse()
        return response.status, _lower(response.getheaders()), response.read()
    finally:
        conn.close()


def _lower(headers):
    return {k.lower(): v for k, v in headers}


def upload(url, path, size, token=None):
    """Stream ``size`` bytes to ``path``; return (status, headers, body)."""
    conn = _connect(url, 120)
    try:
        conn.putrequest("POST", path, skip_accept_encoding=True)
        conn.putheader("Content-Type", "application/octet-stream")
        conn.putheader("Content-Length", str(size))
        if token is not None:
            conn.putheader("Authorization", f"Bearer {token}")
        conn.endheaders()
        chunk = b"\x00" * (256 * 1024)
        sent = 0
        while sent < size:
            conn.send(chunk[: size - sent])
            sent += min(len(chunk), size - sent)
        response = conn.getresponse()
        return response.status, _lower(response.getheaders()), response.read()
    finally:
        conn.close()


def concurrently(n, fn):
    results, errors = [None] * n, []

    def run(i):
        try:
            results[i] = fn(i)
        except Exception as exc:  # reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    return results


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """This module's service lives for the module: on SQLite and on PostgreSQL."""
    return module_backend


@pytest.fixture(scope="module")
def served(tmp_path_factory, _both_backends):
    server = Served(tmp_path_factory.mktemp("unauthenticated") / "data")
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("path", "length", "content_type"),
    [
        ("/v/agenttask.create", 200_000, "application/json"),
        ("/v/agenttask.checkpoint.write", 1_200_000, "application/json"),
        (WORKFLOW, 200_000, "application/json"),
        (UPLOAD, COLLECTOR_ENVELOPE_MAX_BYTES, "application/octet-stream"),
        ("/mcp", 1_000_000, "application/json"),
        ("/v1/hub/workspace/mcp?repository=acme&profile=default", 200_000, "application/json"),
    ],
)
def test_no_token_is_refused_before_a_byte_of_body_is_sent(served, path, length, content_type):
    # The client sends headers only and waits: an answer proves the body was never awaited.
    status, headers, body = headers_only(served.url, path, length, content_type)
    assert status == 401, body
    challenge = headers.get("www-authenticate", "")
    if "mcp" in path:
        # An MCP endpoint is an OAuth protected resource: its 401 points at its metadata
        # (RFC 9728) and names the scope (the MCP authorization spec).
        assert challenge.startswith('Bearer resource_metadata="http://'), challenge
        assert "/.well-known/oauth-protected-resource" in challenge
        assert ' scope="' in challenge
    else:
        assert challenge == "Bearer"
    assert json.loads(body)["code"] == "UNAUTHENTICATED"


def test_a_token_below_the_operations_tier_is_refused_before_its_body(served):
    agent = served.token("default", "agent", 1)
    status, _, body = headers_only(
        served.url, "/v/agenttask.checkpoint.prune", 100_000, "application/json", agent
    )
    assert status == 403, body
    assert json.loads(body)["code"] == "FORBIDDEN"
    status, _, body = headers_only(
        served.url, "/v/agenttask.nope", 100_000, "application/json", agent
    )
    assert status == 404, body


@pytest.mark.slow
def test_32_concurrent_unauthenticated_16_mib_uploads_do_not_raise_memory(served):
    served.post("/v/agenttask.list", {}, served.admin)  # warm: imports, threads, journal
    served.reset_peak()
    before = served.rss_peak_kib()
    size = COLLECTOR_ENVELOPE_MAX_BYTES
    results = concurrently(32, lambda i: upload(served.url, UPLOAD, size))
    grown_mib = (served.rss_peak_kib() - before) / 1024
    assert {status for status, _, _ in results} == {401}
    assert grown_mib < 64, f"peak RSS grew by {grown_mib:.0f} MiB"


@pytest.mark.slow
def test_authenticated_uploads_share_a_bounded_body_budget(served):
    token = served.token("default", "agent", 1)
    served.post("/v/agenttask.list", {}, token)
    served.reset_peak()
    before = served.rss_peak_kib()
    size = COLLECTOR_ENVELOPE_MAX_BYTES
    results = concurrently(16, lambda i: upload(served.url, UPLOAD, size, token))
    grown_mib = (served.rss_peak_kib() - before) / 1024
    statuses = [status for status, _, _ in results]
    assert all(s < 500 or s == 503 for s in statuses), statuses
    refused = [(h, b) for s, h, b in results if s == 503]
    assert refused, statuses  # 16 x 16 MiB does not fit the 64 MiB budget at once
    for headers, body in refused:
        assert json.loads(body)["code"] == "OVERLOADED"
        assert int(headers["retry-after"]) >= 1
    assert any(s != 503 for s in statuses)  # and what fits is served
    # The default budget is 64 MiB of body bytes; a body is held once as chunks and once
    # joined, so the peak stays well under 16 x 16 MiB = 256 MiB.
    assert grown_mib < 64 * 2 + 32, f"peak RSS grew by {grown_mib:.0f} MiB"
