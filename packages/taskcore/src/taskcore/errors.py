"""The closed set of error codes and the one exception type every layer raises.

Every failure the system reports carries an :class:`ErrorCode`. Each code belongs to an
:class:`ErrorKind`, and the kind alone decides the transport mapping (HTTP status, CLI exit
status, MCP tool error), so adapters translate without deciding. New codes are added here and
nowhere else; the wire spelling (``code.value``) never changes once published.

>>> err = TaskError(ErrorCode.UNKNOWN_FIELD, "unknown field 'colour'", path="$.criteria[0]")
>>> err.to_json()
{'error': "unknown field 'colour' at $.criteria[0]", 'code': 'UNKNOWN_FIELD', 'path': '$.criteria[0]'}
>>> err.code.kind.http_status
400
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

__all__ = ["ErrorCode", "ErrorKind", "TaskError"]


class ErrorKind(enum.Enum):
    """The class of a failure; each kind has exactly one HTTP status and one CLI exit status."""

    BAD_REQUEST = (400, 3)
    UNAUTHENTICATED = (401, 4)
    FORBIDDEN = (403, 4)
    NOT_FOUND = (404, 5)
    METHOD_NOT_ALLOWED = (405, 2)
    CONFLICT = (409, 6)
    GONE = (410, 5)
    TOO_LARGE = (413, 7)
    URI_TOO_LONG = (414, 7)
    HEADERS_TOO_LARGE = (431, 7)
    UNSUPPORTED_MEDIA = (415, 3)
    UNPROCESSABLE = (422, 3)
    RATE_LIMITED = (429, 8)
    UNAVAILABLE = (503, 8)
    INTERNAL = (500, 1)

    @property
    def http_status(self) -> int:
        """The HTTP status code an adapter must answer with."""
        return self.value[0]

    @property
    def exit_status(self) -> int:
        """The process exit status the CLI must end with."""
        return self.value[1]

    @property
    def jsonrpc_code(self) -> int:
        """The JSON-RPC error code for a refusal of a protocol method (MCP ``tasks/*``).

        The request named something wrong or missing: ``-32602`` (invalid params, which the
        MCP Tasks extension prescribes for an unknown task id). A bug: ``-32603``. Anything
        else (who is calling, state, load): ``-32000``, JSON-RPC's implementation-defined
        server error. The ``{error, code}`` body travels as the error's ``data``.

        >>> ErrorKind.NOT_FOUND.jsonrpc_code, ErrorKind.CONFLICT.jsonrpc_code
        (-32602, -32000)
        """
        if self in _INVALID_PARAMS_KINDS:
            return -32602
        if self is ErrorKind.INTERNAL:
            return -32603
        return -32000


_INVALID_PARAMS_KINDS = frozenset(
    {
        ErrorKind.BAD_REQUEST,
        ErrorKind.NOT_FOUND,
        ErrorKind.TOO_LARGE,
        ErrorKind.URI_TOO_LONG,
        ErrorKind.HEADERS_TOO_LARGE,
        ErrorKind.UNPROCESSABLE,
        ErrorKind.UNSUPPORTED_MEDIA,
    }
)


class ErrorCode(enum.Enum):
    """Stable, closed error codes. ``value`` is the wire spelling."""

    # -- decoding and validation (the request itself is wrong) -------------------------------
    MALFORMED_JSON = ("MALFORMED_JSON", ErrorKind.BAD_REQUEST)
    UNKNOWN_FIELD = ("UNKNOWN_FIELD", ErrorKind.BAD_REQUEST)
    MISSING_FIELD = ("MISSING_FIELD", ErrorKind.BAD_REQUEST)
    WRONG_TYPE = ("WRONG_TYPE", ErrorKind.BAD_REQUEST)
    BAD_INPUT = ("BAD_INPUT", ErrorKind.BAD_REQUEST)
    OUT_OF_BOUNDS = ("OUT_OF_BOUNDS", ErrorKind.UNPROCESSABLE)
    INVALID_VALUE = ("INVALID_VALUE", ErrorKind.UNPROCESSABLE)
    UNSUPPORTED_VERSION = ("UNSUPPORTED_VERSION", ErrorKind.UNPROCESSABLE)
    INVALID_PATH = ("INVALID_PATH", ErrorKind.UNPROCESSABLE)
    INVALID_CRITERIA = ("INVALID_CRITERIA", ErrorKind.UNPROCESSABLE)
    INVALID_SIGNATURE = ("INVALID_SIGNATURE", ErrorKind.UNPROCESSABLE)
    INVALID_RECOVERY = ("INVALID_RECOVERY", ErrorKind.UNPROCESSABLE)
    BINDING_MISMATCH = ("BINDING_MISMATCH", ErrorKind.UNPROCESSABLE)
    PAYLOAD_TOO_LARGE = ("PAYLOAD_TOO_LARGE", ErrorKind.TOO_LARGE)
    # The transport's bounds on what comes before a body: the request line's target (414) and
    # the header fields (431). Answered before any route, with the {error, code} body.
    URI_TOO_LONG = ("URI_TOO_LONG", ErrorKind.URI_TOO_LONG)
    HEADERS_TOO_LARGE = ("HEADERS_TOO_LARGE", ErrorKind.HEADERS_TOO_LARGE)
    UNSUPPORTED_MEDIA_TYPE = ("UNSUPPORTED_MEDIA_TYPE", ErrorKind.UNSUPPORTED_MEDIA)
    TRANSFER_MALFORMED = ("TRANSFER_MALFORMED", ErrorKind.BAD_REQUEST)
    REVISION_MISMATCH = ("REVISION_MISMATCH", ErrorKind.UNPROCESSABLE)
    RUNTIME_MISMATCH = ("RUNTIME_MISMATCH", ErrorKind.UNPROCESSABLE)

    # -- who is calling --------------------------------------------------------------------
    UNAUTHENTICATED = ("UNAUTHENTICATED", ErrorKind.UNAUTHENTICATED)
    TOKEN_REVOKED = ("TOKEN_REVOKED", ErrorKind.UNAUTHENTICATED)
    FORBIDDEN = ("FORBIDDEN", ErrorKind.FORBIDDEN)
    AUTONOMY_EXCEEDED = ("AUTONOMY_EXCEEDED", ErrorKind.FORBIDDEN)
    AUTHORIZATION_CHANGED = ("AUTHORIZATION_CHANGED", ErrorKind.FORBIDDEN)
    EXECUTOR_NOT_ENROLLED = ("EXECUTOR_NOT_ENROLLED", ErrorKind.FORBIDDEN)
    EXECUTOR_REVOKED = ("EXECUTOR_REVOKED", ErrorKind.FORBIDDEN)
    # An approval grant (agenttask.gate.apply) that does not cover the call presented.
    GRANT_DENIED = ("GRANT_DENIED", ErrorKind.FORBIDDEN)
    GRANT_TASK_MISMATCH = ("GRANT_TASK_MISMATCH", ErrorKind.FORBIDDEN)
    GRANT_VERB_MISMATCH = ("GRANT_VERB_MISMATCH", ErrorKind.FORBIDDEN)
    GRANT_INPUT_MISMATCH = ("GRANT_INPUT_MISMATCH", ErrorKind.FORBIDDEN)
    # DNS-rebinding protection of the MCP endpoints and the board: the request named a host
    # (Host) or came from a page (Origin) that is not this server's.
    HOST_NOT_ALLOWED = ("HOST_NOT_ALLOWED", ErrorKind.FORBIDDEN)
    ORIGIN_NOT_ALLOWED = ("ORIGIN_NOT_ALLOWED", ErrorKind.FORBIDDEN)

    # -- what is asked for -----------------------------------------------------------------
    NOT_FOUND = ("NOT_FOUND", ErrorKind.NOT_FOUND)
    UNKNOWN_OPERATION = ("UNKNOWN_OPERATION", ErrorKind.NOT_FOUND)
    METHOD_NOT_ALLOWED = ("METHOD_NOT_ALLOWED", ErrorKind.METHOD_NOT_ALLOWED)

    # -- the state does not allow it -------------------------------------------------------
    CONFLICT = ("CONFLICT", ErrorKind.CONFLICT)
    ILLEGAL_TRANSITION = ("ILLEGAL_TRANSITION", ErrorKind.CONFLICT)
    ALREADY_EXISTS = ("ALREADY_EXISTS", ErrorKind.CONFLICT)
    IDEMPOTENCY_CONFLICT = ("IDEMPOTENCY_CONFLICT", ErrorKind.CONFLICT)
    STALE_FENCE = ("STALE_FENCE", ErrorKind.CONFLICT)
    LEASE_RUNAWAY = ("LEASE_RUNAWAY", ErrorKind.CONFLICT)
    LEASE_NOT_HELD = ("LEASE_NOT_HELD", ErrorKind.CONFLICT)
    DEPENDENCY_INCOMPLETE = ("DEPENDENCY_INCOMPLETE", ErrorKind.CONFLICT)
    PRIOR_SUBJECT_UNRESOLVED = ("PRIOR_SUBJECT_UNRESOLVED", ErrorKind.CONFLICT)
    SUBJECT_STALE = ("SUBJECT_STALE", ErrorKind.CONFLICT)
    DEPTH_EXCEEDED = ("DEPTH_EXCEEDED", ErrorKind.CONFLICT)
    EXECUTION_UNCERTAIN = ("EXECUTION_UNCERTAIN", ErrorKind.CONFLICT)
    COLLECTOR_PROFILE_CHANGED = ("COLLECTOR_PROFILE_CHANGED", ErrorKind.CONFLICT)
    # An approval grant whose gate is not (or no longer) approved.
    GRANT_PENDING = ("GRANT_PENDING", ErrorKind.CONFLICT)
    GRANT_CONSUMED = ("GRANT_CONSUMED", ErrorKind.CONFLICT)
    GRANT_VOIDED = ("GRANT_VOIDED", ErrorKind.CONFLICT)
    NOT_ADMITTED = ("NOT_ADMITTED", ErrorKind.CONFLICT)
    # A process holds the journal of the data directory (a running service, a command) while
    # a restore would replace it, or a restore holds it while a process would open it.
    JOURNAL_IN_USE = ("JOURNAL_IN_USE", ErrorKind.CONFLICT)
    # An event id older than what retention keeps (GET /v1/events with Last-Event-ID): the
    # events after it are gone; details.oldestId names the oldest still held.
    EVENTS_EXPIRED = ("EVENTS_EXPIRED", ErrorKind.GONE)

    # -- the service cannot answer right now -----------------------------------------------
    BUSY = ("BUSY", ErrorKind.UNAVAILABLE)
    RATE_LIMITED = ("RATE_LIMITED", ErrorKind.RATE_LIMITED)
    STORAGE_UNAVAILABLE = ("STORAGE_UNAVAILABLE", ErrorKind.UNAVAILABLE)
    INTEGRITY_FAILURE = ("INTEGRITY_FAILURE", ErrorKind.UNAVAILABLE)
    # Collector side: this machine cannot isolate the command as the profile requires.
    ISOLATION_UNAVAILABLE = ("ISOLATION_UNAVAILABLE", ErrorKind.UNAVAILABLE)
    # The file system holding the journal has no room: nothing was written; retry after the
    # operator frees space (the answer carries Retry-After).
    STORAGE_FULL = ("STORAGE_FULL", ErrorKind.UNAVAILABLE)
    # The server holds as many request bytes or connections as it is configured to; retry.
    OVERLOADED = ("OVERLOADED", ErrorKind.UNAVAILABLE)
    # An MCP tool call did not finish within MCP_TOOL_CALL_MAX_MS: the answer is given, the
    # call itself may still complete (its audit event says how); read the state back first.
    CALL_TIMED_OUT = ("CALL_TIMED_OUT", ErrorKind.UNAVAILABLE)
    # The data directory holds state of an earlier service but its journal is gone or empty:
    # the service refuses to start an empty journal over it (restore, or initialise on purpose).
    JOURNAL_MISSING = ("JOURNAL_MISSING", ErrorKind.UNAVAILABLE)
    # Client side (CLI, hooks): the service could not be reached, or answered with something
    # that is not the documented body. Never sent by the server.
    SERVICE_UNREACHABLE = ("SERVICE_UNREACHABLE", ErrorKind.UNAVAILABLE)
    MALFORMED_RESPONSE = ("MALFORMED_RESPONSE", ErrorKind.UNAVAILABLE)
    INTERNAL = ("INTERNAL", ErrorKind.INTERNAL)

    def __new__(cls, wire: str, kind: ErrorKind) -> ErrorCode:  # noqa: D102 - enum plumbing
        member = object.__new__(cls)
        member._value_ = wire
        return member

    def __init__(self, wire: str, kind: ErrorKind) -> None:
        self.kind = kind

    @classmethod
    def from_wire(cls, wire: str) -> ErrorCode:
        """Return the code for a wire spelling, or raise ``ValueError``."""
        for member in cls:
            if member.value == wire:
                return member
        raise ValueError(f"unknown error code {wire!r}")


class TaskError(Exception):
    """The one exception type of taskcore: a stable code, a message for people, a JSON path.

    The message says what to do; it never contains secrets, file system paths of the server
    or a traceback. ``path`` is a JSON path into the request (``$.criteria[2].outcome``) when
    the failure is about one value of it. ``retry_after`` (whole seconds) says when a refusal
    that is about load or storage, not about the request, is worth retrying; it travels as
    ``details.retry_after_seconds`` and, over HTTP, as ``Retry-After``
    (:meth:`transport_headers`).

    >>> err = TaskError(ErrorCode.RATE_LIMITED, "slow down", retry_after=2)
    >>> err.to_json()["details"], err.transport_headers()
    ({'retry_after_seconds': 2}, {'Retry-After': '2'})
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        path: str | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.path = path
        self.retry_after = None if retry_after is None else max(1, int(retry_after))
        merged = dict(details or {})
        if self.retry_after is not None:
            merged["retry_after_seconds"] = self.retry_after
        self.details: Mapping[str, Any] = merged
        super().__init__(self.describe())

    def describe(self) -> str:
        """Return the message with the JSON path appended, as people should read it."""
        if self.path and self.path != "$":
            return f"{self.message} at {self.path}"
        return self.message

    def at(self, prefix: str) -> TaskError:
        """Return a copy whose path is nested under ``prefix`` (``$.a`` + ``$.b`` -> ``$.a.b``)."""
        inner = self.path or "$"
        nested = prefix + inner[1:] if inner.startswith("$") else prefix + inner
        return TaskError(
            self.code, self.message, path=nested, details=self.details, retry_after=self.retry_after
        )

    def transport_headers(self) -> dict[str, str]:
        """Headers an HTTP answer carrying this error must send (the boundary's hint).

        ``WWW-Authenticate: Bearer`` on 401, ``Retry-After`` when the refusal says when to
        retry (429, 503).
        """
        headers: dict[str, str] = {}
        if self.code.kind is ErrorKind.UNAUTHENTICATED:
            headers["WWW-Authenticate"] = "Bearer"
        if self.retry_after is not None:
            headers["Retry-After"] = str(self.retry_after)
        return headers

    def to_json(self) -> dict[str, Any]:
        """Return the ``{error, code}`` body every transport sends (plus ``path`` if known)."""
        body: dict[str, Any] = {"error": self.describe(), "code": self.code.value}
        if self.path is not None:
            body["path"] = self.path
        if self.details:
            body["details"] = dict(self.details)
        return body
