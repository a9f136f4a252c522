"""A scripted model on 127.0.0.1: the Anthropic Messages and OpenAI Responses wire, no model.

The real harnesses (Claude Code, Codex) are pointed at this server with their documented
base-URL settings. Each test hands it a *script*: the turns the "model" plays, in order. A
turn is some text and/or tool calls. Every request the harness sends is recorded whole
(method, path, headers, JSON body), so a test asserts what the harness offered the model (its
tools), what came back from our hooks (the Stop hook's words in the next request), and that
nothing else was asked.

Two protocols, each as its vendor documents it:

* ``POST /v1/messages`` (Claude Code appends ``?beta=true``): with ``"stream": true`` an SSE
  stream of ``message_start``, per content block ``content_block_start`` /
  ``content_block_delta`` (``text_delta`` or ``input_json_delta``) / ``content_block_stop``,
  then ``message_delta`` (``stop_reason`` ``tool_use`` or ``end_turn``) and
  ``message_stop``; without streaming one ``message`` object.
  ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}``.
* ``POST /v1/responses``: an SSE stream of ``response.created``, ``response.in_progress``,
  per output item ``response.output_item.added`` / (text: ``response.content_part.added``,
  ``response.output_text.delta``, ``response.output_text.done``,
  ``response.content_part.done``) / ``response.output_item.done``, then
  ``response.completed`` with usage.

Which requests play the script: a request that offers tools (a non-empty ``tools`` list) is
the agent loop and takes the next turn; any other request (a title, a summary, a quota probe)
gets ``side_reply`` and does not advance the script. A script item may be a *reactive* turn
(``reply(lambda request: call(...))``: a model that reads what the harness told it), and
``off_script`` may answer a loop request off the script (a compaction's summary request). A loop request after the script's end
is an *overrun*: it is answered with a text turn (so the harness stops) and counted, and a
test asserts there were none. Anything else (``GET``, unknown paths) is recorded and answered
404.

Every Messages and Responses request is also checked against the documented request shape
(:func:`anthropic_problems`, :func:`responses_problems`): the required fields, tool names
(``^[a-zA-Z0-9_-]{1,64}$``, unique), and every tool result answering a call the conversation
made. What does not fit is collected in :attr:`ScriptedModel.problems` (the fixtures assert it
stays empty), and the request is still answered, so one test shows every problem at once.

>>> with ScriptedModel([say("done")]) as model:
...     import json, urllib.request
...     body = json.dumps({"model": "m", "max_tokens": 5, "stream": False,
...         "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
...         "messages": [{"role": "user", "content": "hi"}]}).encode()
...     req = urllib.request.Request(model.url + "/v1/messages", body,
...         {"content-type": "application/json"})
...     opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
...     answer = json.loads(opener.open(req).read())
>>> answer["content"][0]["text"], answer["stop_reason"], model.overruns
('done', 'end_turn', 0)
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from tests.harness.scripted_types import (
    TOOL_NAME,
    Reactive,
    Recorded,
    ToolCall,
    Turn,
    anthropic_problems,
    call,
    reply,
    responses_problems,
    say,
)

__all__ = [
    "TOOL_NAME",
    "Reactive",
    "Recorded",
    "ScriptedModel",
    "ToolCall",
    "Turn",
    "anthropic_events",
    "anthropic_problems",
    "call",
    "parse_sse",
    "reply",
    "responses_events",
    "responses_problems",
    "say",
]

MAX_BODY = 64 * 1024 * 1024
"""A request body larger than this is refused (413) before it is read."""


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def anthropic_events(turn: Turn, *, message_id: str, model: str, ids: Iterable[str]) -> bytes:
    """The SSE body of one streamed Messages answer.

    >>> body = anthropic_events(call("Bash", command="ls"), message_id="msg_1",
    ...                         model="m", ids=iter(["1"]))
    >>> [e for e, _ in parse_sse(body)][:3]
    ['message_start', 'ping', 'content_block_start']
    >>> [d["delta"]["stop_reason"] for e, d in parse_sse(body) if e == "message_delta"]
    ['tool_use']
    """
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        _sse("ping", {"type": "ping"}),
    ]
    index = 0
    if turn.text:
        out.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for piece in _chunks(turn.text):
            out.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for tool in turn.calls:
        out.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": f"toolu_{next(iter(ids))}",
                        "name": tool.name,
                        "input": {},
                    },
                },
            )
        )
        for piece in _chunks(json.dumps(tool.arguments)):
            out.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if turn.calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 5},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def anthropic_message(turn: Turn, *, message_id: str, model: str, ids: Iterable[str]) -> bytes:
    """The JSON body of one non-streamed Messages answer."""
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for tool in turn.calls:
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{next(iter(ids))}",
                "name": tool.name,
                "input": tool.arguments,
            }
        )
    return json.dumps(
        {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    ).encode()


def responses_events(turn: Turn, *, response_id: str, model: str, ids: Iterable[str]) -> bytes:
    """The SSE body of one streamed Responses answer.

    >>> body = responses_events(say("hi"), response_id="resp_1", model="m", ids=iter(["x"]))
    >>> [e for e, _ in parse_sse(body)][-1]
    'response.completed'
    """
    seq = itertools.count()
    created = int(time.time())
    base = {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "model": model,
        "output": [],
    }

    def ev(kind: str, **fields: Any) -> bytes:
        return _sse(kind, {"type": kind, "sequence_number": next(seq), **fields})

    out = [
        ev("response.created", response={**base, "status": "in_progress"}),
        ev("response.in_progress", response={**base, "status": "in_progress"}),
    ]
    items: list[dict[str, Any]] = []
    if turn.text:
        item_id = f"msg_{next(iter(ids))}"
        index = len(items)
        out.append(
            ev(
                "response.output_item.added",
                output_index=index,
                item={
                    "type": "message",
                    "id": item_id,
                    "status": "in_progress",
                    "role": "assistant",
                    "content": [],
                },
            )
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        out.append(
            ev(
                "response.content_part.added",
                item_id=item_id,
                output_index=index,
                content_index=0,
                part=part,
            )
        )
        for piece in _chunks(turn.text):
            out.append(
                ev(
                    "response.output_text.delta",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
            )
        out.append(
            ev(
                "response.output_text.done",
                item_id=item_id,
                output_index=index,
                content_index=0,
                text=turn.text,
            )
        )
        done_part = {**part, "text": turn.text}
        out.append(
            ev(
                "response.content_part.done",
                item_id=item_id,
                output_index=index,
                content_index=0,
                part=done_part,
            )
        )
        item = {
            "type": "message",
            "id": item_id,
            "status": "completed",
            "role": "assistant",
            "content": [done_part],
        }
        out.append(ev("response.output_item.done", output_index=index, item=item))
        items.append(item)
    for tool in turn.calls:
        token = next(iter(ids))
        index = len(items)
        arguments = json.dumps(tool.arguments)
        item = {
            "type": "function_call",
            "id": f"fc_{token}",
            "call_id": f"call_{token}",
            "name": tool.name,
            "arguments": "",
            "status": "in_progress",
        }
        if tool.namespace is not None:
            item["namespace"] = tool.namespace
        out.append(ev("response.output_item.added", output_index=index, item=item))
        out.append(
            ev(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=arguments,
            )
        )
        out.append(
            ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=arguments,
            )
        )
        done = {**item, "arguments": arguments, "status": "completed"}
        out.append(ev("response.output_item.done", output_index=index, item=done))
        items.append(done)
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    out.append(
        ev(
            "response.completed",
            response={**base, "status": "completed", "output": items, "usage": usage},
        )
    )
    return b"".join(out)


def parse_sse(body: bytes) -> list[tuple[str, Any]]:
    """Split an SSE body into ``(event, data)`` pairs (``data`` decoded from JSON).

    >>> parse_sse(b'event: a\\ndata: {"x": 1}\\n\\n')
    [('a', {'x': 1})]
    """
    events: list[tuple[str, Any]] = []
    for block in body.decode().split("\n\n"):
        name, data = "message", []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


class ScriptedModel:
    """The server: ``with ScriptedModel(script) as model: ... model.url ...``."""

    def __init__(
        self,
        script: Sequence[Turn] = (),
        *,
        side_reply: str = "ok",
        overrun_reply: str = "The script has ended.",
    ) -> None:
        self._lock = threading.Lock()
        self._script: list[Turn | Reactive] = list(script)
        self.off_script: Callable[[Recorded], Turn | None] | None = None
        """Answers a loop request itself (``None``: the script does) without advancing it."""
        self._next = 0
        self._ids = (f"{n:06d}" for n in itertools.count(1))
        self.side_reply = side_reply
        self.overrun_reply = overrun_reply
        self.requests: list[Recorded] = []
        self.problems: list[str] = []
        self.overruns = 0
        self.on_request: Callable[[Recorded], None] | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- the script -----------------------------------------------------------------------

    def extend(self, turns: Iterable[Turn | Reactive]) -> None:
        """Append turns to the script (a test may script in stages)."""
        with self._lock:
            self._script.extend(turns)

    @property
    def played(self) -> int:
        """How many turns of the script were answered."""
        with self._lock:
            return self._next

    @property
    def loop_requests(self) -> list[Recorded]:
        """The requests that played the script (and overruns), in order."""
        with self._lock:
            return [r for r in self.requests if r.loop]

    def overrun_report(self) -> str:
        """What the harness sent after the script's end: the tail of each overrun request's
        last input item, so a failing ``overruns == 0`` says why the harness went on (a Stop
        hook that held the session, a retried request, ...)."""
        with self._lock:
            over = [r for r in self.requests if r.loop and r.turn is None]
        lines = []
        for rec in over:
            body = rec.body if isinstance(rec.body, dict) else {}
            items = body.get("input") or body.get("messages") or []
            last = items[-1] if isinstance(items, list) and items else None
            lines.append(f"{rec.path}: {json.dumps(last)[-600:]}")
        return "\n".join(lines) or "no overrun request recorded"

    def _take(self, request: Recorded) -> tuple[Turn, int | None]:
        answer = self.off_script(request) if self.off_script is not None else None
        if answer is not None:
            return answer, None
        with self._lock:
            if self._next >= len(self._script):
                self.overruns += 1
                return say(self.overrun_reply), None
            index, self._next = self._next, self._next + 1
            item = self._script[index]
        return (item if isinstance(item, Turn) else item(request)), index

    def _new_id(self) -> str:
        with self._lock:
            return next(self._ids)

    # -- the server -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> str:
        """Listen on an ephemeral port of 127.0.0.1; return the base URL."""
        model = self

        class Handler(_Handler):
            owner = model

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop listening (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedModel:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, rec: Recorded, problems: Sequence[str] = ()) -> None:
        with self._lock:
            self.requests.append(rec)
            self.problems.extend(f"{rec.path}: {p}" for p in problems)
        if self.on_request is not None:
            self.on_request(rec)


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedModel
    protocol_version = "HTTP/1.1"
    server_version = "scripted-model/1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the record is the log."""

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        if content_type == "text/event-stream":
            self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_{self.owner._new_id()}")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        self.owner._record(
            Recorded(
                method="GET",
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=None,
                loop=False,
                turn=None,
            )
        )
        self._json(404, {"error": {"type": "not_found_error", "message": "not scripted"}})

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            self._json(413, {"error": {"type": "request_too_large", "message": "too large"}})
            return
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = parts.path.rstrip("/")
        is_messages = path.endswith("/v1/messages")
        is_responses = path.endswith("/v1/responses") or path.endswith("/responses")
        loop = (
            (is_messages or is_responses)
            and isinstance(body, dict)
            and isinstance(body.get("tools"), list)
            and bool(body["tools"])
        )
        seen = Recorded(
            method="POST",
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            loop=loop,
            turn=None,
        )
        turn, index = self.owner._take(seen) if loop else (say(self.owner.side_reply), None)
        problems: list[str] = []
        if is_messages:
            problems = anthropic_problems(body)
        elif is_responses:
            problems = responses_problems(body)
        self.owner._record(attrs.evolve(seen, turn=index), problems)
        model = body.get("model", "scripted") if isinstance(body, dict) else "scripted"
        model = model if isinstance(model, str) else "scripted"
        ids = (self.owner._new_id() for _ in itertools.count())
        if path.endswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
        elif is_messages:
            message_id = f"msg_{self.owner._new_id()}"
            if isinstance(body, dict) and body.get("stream") is True:
                events = anthropic_events(turn, message_id=message_id, model=model, ids=ids)
                self._send(200, events, "text/event-stream")
            else:
                message = anthropic_message(turn, message_id=message_id, model=model, ids=ids)
                self._send(200, message, "application/json")
        elif is_responses:
            response_id = f"resp_{self.owner._new_id()}"
            events = responses_events(turn, response_id=response_id, model=model, ids=ids)
            self._send(200, events, "text/event-stream")
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": "not scripted"}})
