"""A webhook receiver for the tests: a real HTTP server that verifies what it gets the way a
receiver in the wild does (the ``standardwebhooks`` package), answers from a script, and
de-duplicates by ``webhook-id``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook


class Receiver:
    """``url``; ``received`` (every request, verified or not); ``unique()`` (de-duplicated)."""

    def __init__(self, secret: str, answer: Callable[[str, int], int] | None = None) -> None:
        self.webhook = Webhook(secret)
        self.answer = answer or (lambda message_id, seen: 200)
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    payload = receiver.webhook.verify(body, headers)
                    verified = True
                except Exception:
                    payload, verified = json.loads(body or b"null"), False
                message_id = headers.get("webhook-id", "")
                with receiver.lock:
                    seen = sum(1 for r in receiver.received if r["id"] == message_id)
                    receiver.received.append(
                        {
                            "id": message_id,
                            "headers": headers,
                            "body": body,
                            "payload": payload,
                            "verified": verified,
                            "path": self.path,
                        }
                    )
                status = receiver.answer(message_id, seen)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/agent-task"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def unique(self) -> dict[str, dict[str, Any]]:
        """The verified messages, de-duplicated by ``webhook-id`` (first copy kept)."""
        out: dict[str, dict[str, Any]] = {}
        with self.lock:
            for r in self.received:
                if r["verified"]:
                    out.setdefault(r["id"], r)
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
