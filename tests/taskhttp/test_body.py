import anyio
import pytest
from starlette.requests import Request
from taskcore import ErrorCode, TaskError
from taskhttp.body import JSON, OCTET_STREAM, read_body, require_media_type


def _request(headers, chunks=()):
    items = chunks if isinstance(chunks, list) else list(chunks)

    async def receive():
        if items:
            return {"type": "http.request", "body": items.pop(0), "more_body": bool(items)}
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive)


@pytest.mark.parametrize(
    ("header", "expected", "ok"),
    [
        ("application/json", JSON, True),
        ("Application/JSON", JSON, True),
        ("application/json; charset=utf-8", JSON, True),
        ('application/json; charset="UTF-8"', JSON, True),
        ("application/json; charset=iso-8859-1", JSON, False),
        ("application/octet-stream", OCTET_STREAM, True),
        ("application/octet-stream; charset=utf-8", OCTET_STREAM, False),
        ("text/json", JSON, False),
    ],
)
def test_media_type_check(header, expected, ok):
    request = _request({"content-type": header})
    if ok:
        require_media_type(request, expected)
    else:
        with pytest.raises(TaskError) as info:
            require_media_type(request, expected)
        assert info.value.code is ErrorCode.UNSUPPORTED_MEDIA_TYPE


def test_missing_media_type_is_refused():
    with pytest.raises(TaskError) as info:
        require_media_type(_request({}), JSON)
    assert info.value.code is ErrorCode.UNSUPPORTED_MEDIA_TYPE


def _read(request, limit):
    return anyio.run(read_body, request, limit)


def test_body_within_the_bound_is_returned_whole():
    assert _read(_request({}, [b"ab", b"cd"]), 4) == b"abcd"


def test_declared_length_over_the_bound_is_refused_before_reading():
    chunks = [b"never read"]
    request = _request({"content-length": "11"}, chunks)
    with pytest.raises(TaskError) as info:
        _read(request, 10)
    assert info.value.code is ErrorCode.PAYLOAD_TOO_LARGE
    assert chunks == [b"never read"]


def test_undeclared_body_is_refused_when_it_passes_the_bound():
    chunks = [b"12345", b"67890", b"x", b"unread"]
    with pytest.raises(TaskError) as info:
        _read(_request({}, chunks), 10)
    assert info.value.code is ErrorCode.PAYLOAD_TOO_LARGE
    assert chunks == [b"unread"]


def test_non_numeric_content_length_is_bad_input():
    with pytest.raises(TaskError) as info:
        _read(_request({"content-length": "ten"}), 10)
    assert info.value.code is ErrorCode.BAD_INPUT


def test_a_declared_length_is_reserved_before_a_byte_is_read():
    from taskhttp.limits import BodyBudget, Reservation

    budget = BodyBudget(10)
    other = Reservation(budget)
    other.need(5)
    reads = []
    request = _request({"content-length": "8"}, [b"12345678"])
    original = request._receive

    async def counting():
        reads.append(1)
        return await original()

    request._receive = counting
    with pytest.raises(TaskError) as err:
        anyio.run(read_body, request, 100, Reservation(budget))
    assert err.value.code is ErrorCode.OVERLOADED
    assert reads == []  # refused before reading


def test_a_streamed_body_is_reserved_as_it_arrives():
    from taskhttp.limits import BodyBudget, Reservation

    budget = BodyBudget(10)
    held = Reservation(budget)
    assert anyio.run(read_body, _request({}, [b"1234", b"5678"]), 100, held) == b"12345678"
    assert budget.used == 8
    with pytest.raises(TaskError) as err:
        anyio.run(read_body, _request({}, [b"123", b"456"]), 100, Reservation(budget))
    assert err.value.code is ErrorCode.OVERLOADED


def test_a_client_that_goes_away_mid_body_is_bad_input():
    messages = [
        {"type": "http.request", "body": b"12", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive():
        return messages.pop(0)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    with pytest.raises(TaskError) as err:
        anyio.run(read_body, Request(scope, receive), 100)
    assert err.value.code is ErrorCode.BAD_INPUT
    assert "went away" in err.value.message


def test_empty_chunks_and_a_final_empty_message_add_nothing():
    assert _read(_request({}, [b"", b"ab", b""]), 2) == b"ab"
    assert _read(_request({}, []), 0) == b""
