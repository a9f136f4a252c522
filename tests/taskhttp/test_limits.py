"""Transport limits: header and body deadlines, the connection cap and its health reserve,
the body budget."""

import contextlib
import json
import socket
import time
from urllib.parse import urlsplit

import pytest
from taskcore import ErrorCode, Service, TaskError
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES, HTTP_FD_HEADROOM
from taskhttp import BackgroundServer, TransportLimits, create_app
from taskhttp.limits import BodyBudget, Reservation

from tests.taskhttp.fixtures import build_registry


def test_limits_refuse_a_budget_below_one_upload_and_non_positive_times():
    with pytest.raises(ValueError, match="at least"):
        TransportLimits(body_bytes_in_flight=COLLECTOR_ENVELOPE_MAX_BYTES - 1)
    with pytest.raises(ValueError, match="positive"):
        TransportLimits(header_timeout=0)


@pytest.mark.parametrize(
    ("configured", "descriptors", "cap"),
    [
        (1000, None, None),
        (1000, 256, 256 - HTTP_FD_HEADROOM),
        (1000, 100, 8),  # never below a handful
        (2, 256, 2),  # never above what is configured
        (1000, 100_000, 1000),
    ],
)
def test_the_cap_fits_the_descriptor_limit(configured, descriptors, cap):
    limits = TransportLimits(max_connections=configured)
    if descriptors is None:
        assert limits.connections() <= configured
    else:
        assert limits.connections(descriptors=descriptors) == cap


def test_the_budget_reserves_growth_only_and_refuses_past_its_bound():
    budget = BodyBudget(100)
    a, b = Reservation(budget), Reservation(budget)
    a.need(60)
    a.need(40)  # already held
    b.need(40)
    with pytest.raises(TaskError) as err:
        b.need(41)
    assert err.value.code is ErrorCode.OVERLOADED
    assert err.value.retry_after == 1
    a.release()
    b.need(41)
    assert budget.used == 41


@pytest.fixture
def server(tmp_path, request):
    limits = TransportLimits(**getattr(request, "param", {}))
    service = Service.open(tmp_path, registry=build_registry())
    token = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT).token
    background = BackgroundServer(create_app(service, limits=limits), limits=limits)
    url = background.start()
    yield url, token
    background.stop()
    service.close()


def _sock(url):
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=5)


def _closed_within(sock, seconds, keep_sending=b""):
    """Whether the server closes ``sock`` within ``seconds`` (sending ``keep_sending``)."""
    end = time.monotonic() + seconds
    sock.settimeout(0.1)
    while time.monotonic() < end:
        if keep_sending:
            with contextlib.suppress(OSError):
                sock.sendall(keep_sending)
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def _request(url, token, verb="demo.note", body=b'{"key": "a", "text": "t"}', method="POST"):
    path = f"/v/{verb}" if method == "POST" else verb
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
    if method == "POST":
        head += (
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
        )
    return head.encode() + b"\r\n" + (body if method == "POST" else b"")


def _status(sock):
    sock.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    return int(data.split(b" ", 2)[1])


@pytest.mark.parametrize("server", [{"header_timeout": 0.5}], indirect=True)
def test_a_connection_that_sends_no_request_is_closed_at_the_header_deadline(server):
    url, _ = server
    silent, trickling = _sock(url), _sock(url)
    trickling.sendall(b"POST /v/demo.note HTTP/1.1\r\n")
    assert _closed_within(silent, 2.0)
    assert _closed_within(trickling, 2.0, keep_sending=b"X-A: b\r\n")


@pytest.mark.parametrize("server", [{"body_timeout": 0.5}], indirect=True)
def test_a_body_that_trickles_is_closed_at_the_body_deadline(server):
    url, token = server
    sock = _sock(url)
    sock.sendall(_request(url, token)[:-5])  # headers in, body short by five bytes
    assert _closed_within(sock, 2.5, keep_sending=b"")


@pytest.mark.parametrize("server", [{"header_timeout": 0.5}], indirect=True)
def test_an_idle_kept_alive_connection_is_not_a_slow_header(server):
    url, token = server
    sock = _sock(url)
    sock.sendall(_request(url, token))
    assert _status(sock) == 200
    time.sleep(1.0)  # idle longer than the header deadline, shorter than keep-alive
    sock.sendall(_request(url, token))
    assert _status(sock) == 200


@pytest.mark.parametrize(
    "server",
    [{"max_connections": 2, "health_reserve": 1, "evict_after": 60, "header_timeout": 30}],
    indirect=True,
)
def test_beyond_the_cap_one_slot_serves_health_only_and_the_rest_are_closed(server):
    url, token = server
    held = [_sock(url), _sock(url)]
    time.sleep(0.2)
    reserve = _sock(url)
    reserve.sendall(_request(url, token, "/v1/hub/health", method="GET"))
    assert _status(reserve) == 200
    reserve.sendall(_request(url, token, "/healthz", method="GET"))  # an alias of it too
    assert _status(reserve) == 200
    beyond = _sock(url)
    assert _closed_within(beyond, 2.0)
    reserve.sendall(_request(url, token))
    assert _status(reserve) == 503  # and the reserve slot closes after it
    for sock in [*held, reserve, beyond]:
        sock.close()


@pytest.mark.parametrize(
    "server",
    [{"max_connections": 2, "health_reserve": 0, "evict_after": 0.2, "header_timeout": 30}],
    indirect=True,
)
def test_at_the_cap_a_new_connection_evicts_the_longest_stuck_in_its_headers(server):
    url, token = server
    held = [_sock(url), _sock(url)]
    time.sleep(0.4)
    fresh = _sock(url)
    fresh.sendall(_request(url, token))
    assert _status(fresh) == 200
    assert sum(_closed_within(sock, 1.0) for sock in held) == 1
    for sock in [*held, fresh]:
        sock.close()


def _answer(sock):
    """The whole response on ``sock`` up to the server's close: status and JSON body."""
    sock.settimeout(5)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head.lower(), body


def _with_header(request, name, size):
    """``request`` with one more header whose value is ``size`` bytes."""
    line, _, rest = request.partition(b"\r\n")
    return line + b"\r\n" + name + b": " + b"v" * size + b"\r\n" + rest


@pytest.mark.parametrize("server", [{"header_bytes": 4096}], indirect=True)
def test_headers_past_the_bound_are_refused_typed_and_the_connection_closed(server):
    url, token = server
    within = _sock(url)
    within.sendall(_with_header(_request(url, token), b"X-Pad", 3000))
    assert _status(within) == 200
    past = _sock(url)
    past.sendall(_with_header(_request(url, token), b"X-Pad", 5000))  # one write, complete
    status, head, body = _answer(past)
    assert status == 431
    assert head.startswith(b"http/1.1 431 request header fields too large")  # (lowered)
    assert b"connection: close" in head
    assert b"content-type: application/json" in head
    error = json.loads(body)
    assert (error["code"], error["error"]) == (
        "HEADERS_TOO_LARGE",
        "the request line and headers exceed 4096 bytes; send fewer or shorter headers",
    )
    for sock in (within, past):
        sock.close()


@pytest.mark.parametrize("server", [{"target_bytes": 2048, "header_bytes": 4096}], indirect=True)
def test_a_request_target_past_its_bound_is_414_typed_and_the_connection_closed(server):
    url, token = server
    within = _sock(url)
    within.sendall(_request(url, token, verb="demo.note?" + "q" * 1500))
    assert _status(within) == 200
    past = _sock(url)
    past.sendall(_request(url, token, verb="demo.note?" + "q" * 3000))  # one write, complete
    status, head, body = _answer(past)
    assert status == 414
    assert head.startswith(b"http/1.1 414 ")
    assert b"connection: close" in head
    error = json.loads(body)
    assert error["code"] == "URI_TOO_LONG"
    assert "2048 bytes" in error["error"]
    # A target that never ends (no line end at all) is a URL too long as well.
    endless = _sock(url)
    endless.sendall(b"GET /" + b"a" * (90 * 1024))
    status, _, body = _answer(endless)
    assert status == 414
    assert json.loads(body)["code"] == "URI_TOO_LONG"
    for sock in (within, past, endless):
        sock.close()


@pytest.mark.parametrize("server", [{"header_bytes": 4096, "header_timeout": 60}], indirect=True)
def test_headers_that_never_end_are_refused_once_past_the_bound(server):
    url, _ = server
    sock = _sock(url)
    sock.sendall(b"POST /v/demo.note HTTP/1.1\r\nX-Endless: ")
    deadline = time.monotonic() + 10
    refused = False
    while time.monotonic() < deadline:
        try:
            sock.sendall(b"v" * 8192)  # never a line end: the parser holds it all
        except OSError:
            refused = True
            break
        sock.settimeout(0.01)
        try:
            if sock.recv(65536)[:12] == b"HTTP/1.1 431":
                refused = True
                break
        except TimeoutError:
            continue
    assert refused
    sock.close()


def test_a_later_request_on_a_kept_alive_connection_has_its_own_header_bound(tmp_path):
    limits = TransportLimits(header_bytes=2048)
    service = Service.open(tmp_path, registry=build_registry())
    token = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT).token
    background = BackgroundServer(create_app(service, limits=limits), limits=limits)
    url = background.start()
    try:
        sock = _sock(url)
        sock.settimeout(5)
        pending = b""
        for _ in range(5):  # 5 x 1,500 header bytes on one connection: each within its own
            sock.sendall(_with_header(_request(url, token), b"X-Pad", 1500))
            while b"\r\n\r\n" not in pending:
                pending += sock.recv(65536)
            head, _, pending = pending.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(pending) < length:
                pending += sock.recv(65536)
            pending = pending[length:]
        sock.close()
    finally:
        background.stop()
        service.close()


@pytest.mark.parametrize("server", [{"header_bytes": 4096, "header_timeout": 60}], indirect=True)
def test_one_write_of_an_unfinished_header_past_the_bound_and_its_slack_is_refused(server):
    # The bytes of the read that starts a request's header phase count toward it too.
    url, _ = server
    sock = _sock(url)
    sock.sendall(b"POST /v/demo.note HTTP/1.1\r\nX-Endless: " + b"v" * (90 * 1024))
    status, _, body = _answer(sock)
    assert status == 431
    assert b'"code":"HEADERS_TOO_LARGE"' in body
    sock.close()
