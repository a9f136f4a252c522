"""The plain HTTP client's hand-written pieces, held to what they replaced."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8787",
        "http://127.0.0.1:8787/base/x",
        "http://[::1]:80/",
        "http://[::1",
        "http://[]:80",
        "http://[g::1]",
        "http://host",
        "http://host:",
        "http://host:123456",
        "http://host:0",
        "http://host:99999",
        "http://host/a?b",
        "http://host/a#b",
        "http://host/a b",
        "http://host/a\u00a0b",
        "http://host/\u00e9",
        "http://ho_st",
        "http://h\u00f6st",
        "http://",
        "https://host",
        "http://host:80x",
        "http://host/../x",
        "http://a..b:1",
    ],
)
def test_the_url_reading_is_the_regular_expression_it_replaced(url):
    import re

    from taskcli.plainhttp import split_url

    match = re.fullmatch(
        r"http://(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+))(?::([0-9]{1,5}))?(/[^?#\s]*)?", url
    )
    expected = (
        None
        if match is None
        else (match.group(1) or match.group(2), match.group(3) or "", match.group(4) or "")
    )
    assert split_url(url) == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", b"127.0.0.1"),
        ("::1", b"::1"),
        ("fe80::1:2", b"fe80::1:2"),
        ("localhost", "localhost"),
        ("1..2", "1..2"),
        ("beef", "beef"),
        ("a.b", "a.b"),
    ],
)
def test_an_ip_literal_goes_to_getaddrinfo_as_the_bytes_idna_would_give(host, expected):
    from taskcli.plainhttp import _host

    got = _host(host)
    assert got == expected
    if isinstance(got, bytes):
        assert got == host.encode("idna")
