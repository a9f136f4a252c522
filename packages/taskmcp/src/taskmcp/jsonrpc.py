"""The JSON-RPC envelope every MCP door checks before the SDK sees a message.

JSON-RPC 2.0 gives two codes to messages that never reach a method: ``-32700`` (parse
error) for text that is not JSON, and ``-32600`` (invalid request) for JSON that is not a
JSON-RPC message. The MCP SDK answers neither the way the specification says (over HTTP it
answers a malformed message with ``-32602`` and a pydantic dump; on stdio it drops both
without an answer), so the HTTP door and ``agent-task mcp --stdio`` check the envelope here
first and answer these errors themselves, with the ``{error, code}`` body every transport
sends as the error's ``data``.

What a valid message is (JSON-RPC 2.0 as MCP narrows it): one JSON object (MCP has no
batches), ``"jsonrpc": "2.0"``, and either a request or notification (``method`` a non-empty
string, ``params`` an object when present, ``id`` a string or an integer when present: MCP
forbids ``null``), or a response (``id`` and exactly one of ``result``, an object, or
``error``, an object with an integer ``code`` and a string ``message``).

Nothing here imports the ``mcp`` SDK.

>>> invalid({"jsonrpc": "2.0", "id": 1, "method": "ping"}) is None
True
>>> invalid([]).message
'send one JSON-RPC message (an object) per request; MCP has no batches'
>>> invalid({"jsonrpc": "2.0", "id": True, "method": "ping"}).code.value
'BAD_INPUT'
>>> message_id({"jsonrpc": "2.0", "id": 7, "method": 5})
7
>>> error_body(INVALID_REQUEST, invalid({"id": 3}), 3)["error"]["code"]
-32600
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse
from taskcore import ErrorCode, TaskError

__all__ = [
    "INVALID_REQUEST",
    "PARSE_ERROR",
    "error_body",
    "error_response",
    "invalid",
    "message_id",
]

PARSE_ERROR = -32700
"""JSON-RPC: the text is not JSON."""
INVALID_REQUEST = -32600
"""JSON-RPC: the JSON is not a valid JSON-RPC message."""

_HINT = "send a JSON-RPC 2.0 message"


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def message_id(message: Any) -> str | int | None:
    """The message's ``id`` when it is a valid one (what an error answer echoes), else ``None``."""
    if isinstance(message, dict):
        value = message.get("id")
        if _valid_id(value):
            return value
    return None


def _bad(message: str) -> TaskError:
    return TaskError(ErrorCode.BAD_INPUT, message)


def invalid(message: Any) -> TaskError | None:
    """Why a parsed ``message`` is not a JSON-RPC message MCP accepts, or ``None`` when it is."""
    if isinstance(message, list):
        return _bad("send one JSON-RPC message (an object) per request; MCP has no batches")
    if not isinstance(message, dict):
        return _bad(f"{_HINT}: a JSON object")
    if message.get("jsonrpc") != "2.0":
        return _bad(f'{_HINT}: "jsonrpc" must be "2.0"')
    # An error answer to a message whose id could not be read has a null id; nothing else may.
    null_error_id = message.get("id", 0) is None and "error" in message and "method" not in message
    if "id" in message and not _valid_id(message["id"]) and not null_error_id:
        return _bad(f'{_HINT}: "id" is a string or an integer (never null)')
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            return _bad(f'{_HINT}: "method" is a non-empty string')
        if "params" in message and not isinstance(message["params"], dict):
            return _bad(f'{_HINT}: "params" is an object when present')
        if "result" in message or "error" in message:
            return _bad(f'{_HINT}: a request carries no "result" or "error"')
        return None
    if "id" not in message:
        return _bad(f'{_HINT}: a request needs "method"; a response needs "id"')
    if ("result" in message) == ("error" in message):
        return _bad(f'{_HINT}: a response carries exactly one of "result" and "error"')
    if "result" in message and not isinstance(message["result"], dict):
        return _bad(f'{_HINT}: "result" is an object')
    error = message.get("error")
    if "error" in message and (
        not isinstance(error, dict)
        or not isinstance(error.get("code"), int)
        or isinstance(error.get("code"), bool)
        or not isinstance(error.get("message"), str)
    ):
        return _bad(f'{_HINT}: "error" is an object with an integer "code" and a string "message"')
    return None


def error_body(code: int, err: TaskError, request_id: str | int | None) -> dict[str, Any]:
    """The JSON-RPC error answer: ``code``, the error's text, and its ``{error, code}`` as data."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": err.describe(), "data": err.to_json()},
    }


def error_response(code: int, err: TaskError, request_id: str | int | None = None) -> JSONResponse:
    """:func:`error_body` as an HTTP answer: status 400, as the MCP transport gives these errors."""
    return JSONResponse(error_body(code, err, request_id), status_code=400)
