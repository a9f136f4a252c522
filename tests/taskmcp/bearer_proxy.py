"""A byte-level HTTP/1.1 proxy on 127.0.0.1 that adds ``Authorization: Bearer`` (test support).

The conformance suite's server scenarios send no credentials (they are written for servers
without authentication), and every MCP endpoint here needs a bearer token. This proxy puts
one into each request and changes nothing else: the request line, every other header (Host,
Origin, ``Mcp-*`` with their whitespace) and the body go on byte for byte, and the answer
comes back as the server wrote it (JSON or an open event stream). An HTTP library in
between would not do: it rewrites headers and refuses values it finds odd (httpx refuses a
trailing space in ``Mcp-Name``, which the suite sends on purpose).

Requests on one connection are read one after another (``Content-Length`` or chunked
bodies); answers are copied as a plain byte stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["BearerProxy"]

_HEAD_MAX = 64 * 1024


class BearerProxy:
    """``with BearerProxy(upstream, token) as url:`` forwards ``url`` to ``upstream``."""

    def __init__(self, upstream: str, token: str) -> None:
        host, port = upstream.removeprefix("http://").rstrip("/").split(":")
        self.upstream = (host, int(port))
        self.token = token.encode("ascii")
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None

    def __enter__(self) -> str:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.url = future.result(10)
        return self.url

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        back = asyncio.create_task(self._copy(up_reader, writer))
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    break
                if len(head) > _HEAD_MAX:
                    break
                lines = head[:-4].split(b"\r\n")
                kept = [
                    line for line in lines[1:] if not line.lower().startswith(b"authorization:")
                ]
                up_writer.write(
                    b"\r\n".join(
                        [lines[0], b"Authorization: Bearer " + self.token, *kept, b"", b""]
                    )
                )
                await self._body(reader, up_writer, kept)
                await up_writer.drain()
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(back, 30)
            writer.close()

    @staticmethod
    async def _body(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: list[bytes]
    ) -> None:
        fields = {}
        for line in headers:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip().lower()
        if b"chunked" in fields.get(b"transfer-encoding", b""):
            while True:
                size_line = await reader.readuntil(b"\r\n")
                writer.write(size_line)
                size = int(size_line.split(b";")[0].strip(), 16)
                writer.write(await reader.readexactly(size + 2))
                if size == 0:
                    return
        length = int(fields.get(b"content-length", b"0") or 0)
        if length:
            writer.write(await reader.readexactly(length))

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()
