"""Named-reference path rules (seed "Instructions and named references").

A canonical relative path is ASCII, uses ``/`` as its only separator and has no empty, ``.``
or ``..`` component, no leading ``/``, no backslash, no control character (NUL..US and DEL)
and no ``:`` (which rules out drive and prefix forms such as ``C:`` or ``file:``).

>>> validate_reference_path("docs/guide.md")
'docs/guide.md'
>>> validate_reference_path("docs/../etc/passwd")
Traceback (most recent call last):
taskcore.errors.TaskError: path component '..' is not allowed
"""

from __future__ import annotations

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import PATH_MAX_CHARS

__all__ = ["validate_reference_path"]


def _bad(message: str, path: str | None) -> TaskError:
    return TaskError(ErrorCode.INVALID_PATH, message, path=path)


def validate_reference_path(value: str, *, path: str | None = None) -> str:
    """Return ``value`` if it is a canonical relative reference path, else raise INVALID_PATH."""
    if not value:
        raise _bad("path is empty", path)
    if len(value) > PATH_MAX_CHARS:
        raise _bad(f"path is longer than {PATH_MAX_CHARS} characters", path)
    if not value.isascii():
        raise _bad("path must be ASCII", path)
    for ch in value:
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            raise _bad("path contains a control character", path)
    if "\\" in value:
        raise _bad("path contains a backslash; use '/' as the only separator", path)
    if ":" in value:
        raise _bad("path contains ':' (drive and prefix forms are not allowed)", path)
    if value.startswith("/"):
        raise _bad("path must be relative (no leading '/')", path)
    for component in value.split("/"):
        if component == "":
            raise _bad("path has an empty component", path)
        if component in (".", ".."):
            raise _bad(f"path component {component!r} is not allowed", path)
    return value
