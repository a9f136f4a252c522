"""Plain HTTP/1.1 POSTs over one kept-alive socket (standard library only, no click).

The command-line client (:class:`taskcli.common.ServiceClient`) speaks to a plain ``http://``
service through :class:`PlainHttp`; the task-stop hooks' slim pass path
(:mod:`taskcli.task_stop`) uses the same class before click is imported, so both send the same
bytes and read answers the same way.
"""

from __future__ import annotations

from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HttpError", "PlainHttp", "split_url"]


class HttpError(Exception):
    """The exchange failed; ``kind`` is named as httpx names the same failure."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


_HEADER_CHARS = frozenset("\t" + "".join(map(chr, [*range(0x20, 0x7F), *range(0x80, 0x100)])))
"""``[\\t\\x20-\\x7e\\x80-\\xff]``: what a header value may hold (latin-1, no control)."""


_LITERAL_CHARS = frozenset("0123456789.:abcdefABCDEF")


def _host(host: str) -> str | bytes:
    """``host`` as ``getaddrinfo`` gets it: an IP literal as its ASCII bytes.

    Those are exactly the bytes the IDNA codec would give (digits, dots, colons and hex, no
    empty label); passing them skips loading the codec, a few ms of a Stop hook. A name is
    left to the codec, as before.

    >>> _host("127.0.0.1"), _host("::1"), _host("localhost")
    (b'127.0.0.1', b'::1', 'localhost')
    """
    if (
        _LITERAL_CHARS.issuperset(host)
        and (":" in host or host.replace(".", "").isdigit())
        and all(host.split("."))
    ):
        return host.encode("ascii")
    return host


_V6_CHARS = frozenset("0123456789ABCDEFabcdef:.")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")
_DIGITS = frozenset("0123456789")


def split_url(url: str) -> tuple[str, str, str] | None:
    r"""``(host, port digits, path prefix)`` of a plain ``http://`` URL, or ``None``.

    What ``re.fullmatch(r"http://(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+))(?::([0-9]{1,5}))?
    (/[^?#\s]*)?", url)`` accepts, read by hand (the task-stop hooks load no ``re``; a test
    holds the two equal).

    >>> split_url("http://[::1]:8787/base"), split_url("http://h:123456")
    (('::1', '8787', '/base'), None)
    """
    if not url.startswith("http://"):
        return None
    rest = url[7:]
    if rest.startswith("["):
        end = rest.find("]")
        host = rest[1:end] if end > 0 else ""
        if not host or not _V6_CHARS.issuperset(host):
            return None
        rest = rest[end + 1 :]
    else:
        end = 0
        while end < len(rest) and rest[end] in _NAME_CHARS:
            end += 1
        host, rest = rest[:end], rest[end:]
        if not host:
            return None
    port = ""
    if rest.startswith(":"):
        end = 1
        while end < len(rest) and rest[end] in _DIGITS:
            end += 1
        port, rest = rest[1:end], rest[end:]
        if not 1 <= len(port) <= 5:
            return None
    if rest and (rest[0] != "/" or "?" in rest or "#" in rest or any(c.isspace() for c in rest)):
        return None
    return host, port, rest


def _connect(host: str, port: int, timeout: float) -> Any:
    """``socket.create_connection((host, port), timeout)`` on ``_socket`` (no socket.py).

    The same getaddrinfo, the same order of attempts, the last failure raised; the
    ``socket`` module's import (enum, selectors) is several ms of a Stop hook.
    """
    import _socket

    failure: OSError | None = None
    for family, kind, proto, _name, address in _socket.getaddrinfo(
        _host(host), port, 0, _socket.SOCK_STREAM
    ):
        sock = None
        try:
            sock = _socket.socket(family, kind, proto)
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as exc:
            failure = exc
            if sock is not None:
                sock.close()
    raise failure if failure is not None else OSError("getaddrinfo returns an empty list")


class PlainHttp:
    """POST requests to one ``http://host[:port][/prefix]`` over a kept-alive socket.

    Just what the service's answers need: a status line, headers, then a body framed by
    ``Content-Length``, chunked, or the end of the connection; at most
    ``COLLECTOR_ENVELOPE_MAX_BYTES`` of it is read (a longer body is not JSON the client
    accepts). A connection the service closed is opened again once.
    """

    def __init__(self, host: str, port: int, prefix: str, timeout: float) -> None:
        self.host, self.port, self.prefix, self.timeout = host, port, prefix, timeout
        self.authority = host if port == 80 else f"{host}:{port}"
        if ":" in host:
            self.authority = f"[{host}]" if port == 80 else f"[{host}]:{port}"
        self.sock: Any = None
        self.buffer = b""

    @classmethod
    def for_url(cls, url: str, timeout: float) -> PlainHttp | None:
        """The client of a plain ``http://`` URL, or ``None`` for anything else.

        >>> c = PlainHttp.for_url("http://127.0.0.1:8787/base", 5.0)
        >>> (c.host, c.port, c.prefix)
        ('127.0.0.1', 8787, '/base')
        >>> PlainHttp.for_url("https://example.org", 5.0) is None
        True
        """
        parsed = split_url(url)
        if parsed is None:
            return None
        host, port_text, prefix = parsed
        port = int(port_text or 80)
        if not 0 < port < 65536:
            return None
        return cls(host, port, prefix, timeout)

    def close(self) -> None:
        """Close the socket (a later request opens a new one)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buffer = b""

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        """Send one request; return ``(status, body)`` or raise :class:`HttpError`."""
        return self._send("POST", path, body, headers)

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """``GET path`` (``agent doctor``'s health probe); as :meth:`post`."""
        return self._send("GET", path, None, headers or {})

    def _send(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.authority}"]
        for name, value in headers.items():
            if not _HEADER_CHARS.issuperset(value):
                raise HttpError("LocalProtocolError")
            lines.append(f"{name}: {value}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
        reused = self.sock is not None
        try:
            return self._exchange(request)
        except HttpError as failure:
            self.close()
            if reused and failure.kind in ("RemoteProtocolError", "ReadError", "WriteError"):
                return self._exchange(request)  # the kept-alive connection had gone: once more
            raise

    def _exchange(self, request: bytes) -> tuple[int, bytes]:
        import _socket

        if self.sock is None:
            try:
                self.sock = _connect(self.host, self.port, self.timeout)
            except TimeoutError:
                raise HttpError("ConnectTimeout") from None
            except OSError:
                raise HttpError("ConnectError") from None
            self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        try:
            self.sock.sendall(request)
        except TimeoutError:
            self.close()
            raise HttpError("WriteTimeout") from None
        except OSError:
            # The service may have answered (a refusal before the body) and closed.
            if not self._readable():
                self.close()
                raise HttpError("WriteError") from None
        try:
            status, close, content = self._response()
        except TimeoutError:
            self.close()
            raise HttpError("ReadTimeout") from None
        except OSError:
            self.close()
            raise HttpError("ReadError") from None
        if close:
            self.close()
        return status, content

    def _readable(self) -> bool:
        try:
            self.buffer += self.sock.recv(65536)
        except OSError:
            return False
        return bool(self.buffer)

    def _read_until(self, marker: bytes, limit: int) -> bytes:
        while True:
            at = self.buffer.find(marker)
            if at >= 0:
                head, self.buffer = self.buffer[:at], self.buffer[at + len(marker) :]
                return head
            if len(self.buffer) > limit:
                raise HttpError("RemoteProtocolError")
            self._fill()

    def _read_exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self._fill()
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise HttpError("RemoteProtocolError")
        self.buffer += chunk

    def _response(self) -> tuple[int, bool, bytes]:
        limit = COLLECTOR_ENVELOPE_MAX_BYTES + 1
        while True:
            head = self._read_until(b"\r\n\r\n", 65536).decode("latin-1")
            status_line, *header_lines = head.split("\r\n")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                raise HttpError("RemoteProtocolError")
            status = int(parts[1])
            fields: dict[str, str] = {}
            for line in header_lines:
                name, sep, value = line.partition(":")
                if not sep:
                    raise HttpError("RemoteProtocolError")
                fields[name.strip().lower()] = value.strip()
            if status >= 200:
                break  # 1xx: an interim answer; the real one follows
        close = fields.get("connection", "").lower() == "close" or parts[0] == "HTTP/1.0"
        if "chunked" in fields.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            size = 0
            while True:
                try:
                    length = int(self._read_until(b"\r\n", 1024).split(b";")[0].strip(), 16)
                except ValueError:
                    raise HttpError("RemoteProtocolError") from None
                if length == 0:
                    while self._read_until(b"\r\n", 65536):
                        pass  # trailer fields, up to the empty line
                    break
                size += length
                if size > limit:
                    return status, True, b""  # too long to be an answer: not JSON
                chunks.append(self._read_exactly(length))
                self._read_exactly(2)
            return status, close, b"".join(chunks)
        if "content-length" in fields:
            try:
                length = int(fields["content-length"])
            except ValueError:
                raise HttpError("RemoteProtocolError") from None
            if length > limit:
                return status, True, b""  # too long to be an answer: not JSON
            return status, close, self._read_exactly(length)
        # No framing: the body runs to the end of the connection.
        while len(self.buffer) <= limit:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buffer += chunk
        content, self.buffer = self.buffer[:limit], b""
        return status, True, content
