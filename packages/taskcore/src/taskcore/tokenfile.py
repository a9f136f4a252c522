"""Reading a bearer token from a file, for clients (standard library and errors only).

:mod:`taskcore.auth` re-exports both functions; a command-line client or a Stop hook imports
them from here so that reading a token does not load the journal and the codec.

>>> no_token_error().code.value
'UNAUTHENTICATED'
"""

from __future__ import annotations

from pathlib import Path

from taskcore.errors import ErrorCode, TaskError

__all__ = ["no_token_error", "read_token_file"]


def no_token_error() -> TaskError:
    """What a client says when it has no token to send (instead of sending none).

    >>> no_token_error().code.value
    'UNAUTHENTICATED'
    """
    return TaskError(
        ErrorCode.UNAUTHENTICATED,
        "no token: give --token-file FILE (or set AGENT_TASK_TOKEN_FILE, or AGENT_TASK_TOKEN); "
        "an operator prints one with 'agent-task admin token create'",
    )


def read_token_file(path: Path | str) -> str:
    """Read a bearer token from a file (surrounding whitespace ignored).

    Raises ``UNAUTHENTICATED`` when the file cannot be read or holds no token; the message
    names no server path beyond the one the caller gave.
    """
    try:
        with open(path, encoding="ascii") as handle:
            token = handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        raise TaskError(
            ErrorCode.UNAUTHENTICATED, f"cannot read a token from {str(path)[:256]!r}"
        ) from None
    if not token:
        raise TaskError(ErrorCode.UNAUTHENTICATED, f"the token file {str(path)[:256]!r} is empty")
    return token
