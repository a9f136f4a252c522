import json
import threading

import httpx
import pytest
from starlette.applications import Starlette
from taskhttp.server import BackgroundServer, address_of, bind

from tests.taskhttp.fixtures import Gate, Live


def test_bind_port_zero_picks_a_free_port_and_reports_the_url():
    sock = bind("127.0.0.1", 0)
    try:
        url = address_of(sock)
        assert url.startswith("http://127.0.0.1:")
        assert int(url.rsplit(":", 1)[1]) > 0
    finally:
        sock.close()


def test_bind_refuses_a_port_in_use():
    first = bind("127.0.0.1", 0)
    try:
        with pytest.raises(OSError, match="in use"):
            bind("127.0.0.1", first.getsockname()[1])
    finally:
        first.close()


def test_background_server_serves_then_stops_and_frees_the_port():
    server = BackgroundServer(Starlette())
    url = server.start()
    assert httpx.get(url + "/x").status_code == 404
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/x", timeout=5)


def test_stopping_lets_in_flight_requests_finish_and_commit(tmp_path):
    gate = Gate()
    live = Live(tmp_path, gate=gate).start()
    n = 8
    results: list[int] = []
    lock = threading.Lock()

    def call(i):
        r = httpx.post(
            live.url + "/v/demo.slow",
            content=json.dumps({"key": f"k{i}"}),
            headers=live.headers(),
            timeout=60,
        )
        with lock:
            results.append(r.status_code)

    callers = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for t in callers:
        t.start()
    for _ in range(n):
        assert gate.entered.acquire(timeout=60)
    # Every request is inside its handler; its audit commit is still to come. Stop now.
    stopper = threading.Thread(target=live.server.stop)
    stopper.start()
    gate.release.set()
    for t in callers:
        t.join()
    stopper.join()
    assert results == [200] * n
    # Each acknowledged call committed its audit event with its effect.
    assert live.service.audit_count(operation="demo.slow") == n
    live.service.close()
