"""One log line per request with a request id, and the id echoed in a response header."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from taskhttp import BackgroundServer
from taskhttp.requestlog import RequestLogMiddleware, format_line


def _app(fmt, logger):
    async def hello(request):
        return PlainTextResponse("hi")

    return RequestLogMiddleware(Starlette(routes=[Route("/hi", hello)]), fmt=fmt, logger=logger)


@pytest.fixture
def captured():
    logger = logging.getLogger("test.requestlog")
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    handler = Keep()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield logger, lines
    logger.removeHandler(handler)


def test_json_lines_carry_the_request_id_echoed_in_the_header(captured):
    logger, lines = captured
    with BackgroundServer(_app("json", logger)) as url:
        fresh = httpx.get(url + "/hi?token=atk_should_not_be_logged")
        given = httpx.get(url + "/hi", headers={"X-Request-Id": "abc-123"})
        assert given.headers["x-request-id"] == "abc-123"
        unsafe = httpx.get(url + "/missing", headers={"X-Request-Id": "bad id\\nnext"})
    records = [json.loads(line) for line in lines]
    assert [r["request_id"] for r in records][:2] == [fresh.headers["x-request-id"], "abc-123"]
    assert records[0]["path"] == "/hi"
    assert records[0]["status"] == 200
    assert records[0]["bytes"] == 2
    assert records[2]["status"] == 404
    assert records[2]["request_id"] == unsafe.headers["x-request-id"] != "bad id\\nnext"
    assert "atk_should_not_be_logged" not in "".join(lines)


def test_text_lines_are_key_value():
    line = format_line({"request_id": "r", "path": "/a b", "status": 200}, "text")
    assert line == 'request_id=r path="/a b" status=200'


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="log format"):
        RequestLogMiddleware(Starlette(), fmt="xml")


def test_an_id_header_the_app_set_is_replaced_and_a_reused_response_is_left_alone(captured):
    logger, lines = captured
    shared = PlainTextResponse("hi")  # one object answered twice: its headers must not grow

    async def again(request):
        return shared

    async def own_id(request):
        return PlainTextResponse("hi", headers={"X-Request-Id": "from-the-app"})

    app = Starlette(routes=[Route("/again", again), Route("/own", own_id)])
    with BackgroundServer(RequestLogMiddleware(app, fmt="json", logger=logger)) as url:
        first = httpx.get(url + "/again", headers={"X-Request-Id": "one"})
        second = httpx.get(url + "/again", headers={"X-Request-Id": "two"})
        own = httpx.get(url + "/own", headers={"X-Request-Id": "three"})
    assert first.headers.get_list("x-request-id") == ["one"]
    assert second.headers.get_list("x-request-id") == ["two"]
    assert own.headers.get_list("x-request-id") == ["three"]
    assert all(key != b"x-request-id" for key, _ in shared.raw_headers)
    records = [json.loads(line) for line in lines]
    assert [r["request_id"] for r in records] == ["one", "two", "three"]
    assert all(len(r["ts"]) == 20 and r["ts"].endswith("Z") for r in records)


def test_no_line_is_formatted_when_the_logger_drops_info(monkeypatch):
    logger = logging.getLogger("test.requestlog.quiet")
    logger.setLevel(logging.WARNING)
    formatted = []
    monkeypatch.setattr("taskhttp.requestlog.format_line", lambda *a: formatted.append(a) or "line")
    with BackgroundServer(_app("text", logger)) as url:
        answer = httpx.get(url + "/hi")
    assert answer.status_code == 200
    assert answer.headers["x-request-id"]
    assert formatted == []
    logger.setLevel(logging.INFO)
    with BackgroundServer(_app("text", logger)) as url:
        httpx.get(url + "/hi")
    assert len(formatted) == 1
