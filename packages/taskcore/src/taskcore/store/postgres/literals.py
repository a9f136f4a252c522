"""Values as SQL literals (store/postgres).

A statement sent in a simple query (:mod:`taskcore.store.postgres.connection`: the token
re-check with its ``BEGIN``, deferred writes with the next read or the ``COMMIT``) carries
its values as literals: :func:`bind` writes strings, integers, floats, booleans and ``NULL``
as psycopg writes them (:func:`literal`) and leaves any other value to psycopg's own
``ClientCursor.mogrify``; no value of ours is formatted into SQL text otherwise.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import psycopg

__all__ = ["bind", "literal"]

_PLACEHOLDER = re.compile(r"(%%|%s)")
_INT8_MIN = -(2**63)


def bind(raw: psycopg.Connection[Any], query: str, args: Sequence[Any] | None) -> str:
    """``query`` with ``args`` bound as SQL literals (a statement of a simple query).

    Strings, integers, floats, booleans and ``None`` are written here as psycopg writes them
    (:func:`literal`); a statement with any other value is bound by psycopg itself
    (``ClientCursor.mogrify``, its own escaping by the connection's settings).
    """
    if args is None:
        return query
    chunks = _chunks(query)
    if chunks is not None and len(chunks) == len(args) + 1:
        out = [chunks[0]]
        for value, chunk in zip(args, chunks[1:], strict=True):
            text = literal(value)
            if text is None:
                break
            out.append(text)
            out.append(chunk)
        else:
            return "".join(out)
    args = [str(a) if type(a) is int and a == _INT8_MIN else a for a in args]
    return psycopg.ClientCursor(raw).mogrify(query, args)


@functools.lru_cache(maxsize=1024)
def _chunks(query: str) -> tuple[str, ...] | None:
    """``query`` (psycopg text) cut at its ``%s`` placeholders, ``%%`` as ``%``.

    ``None`` when it holds another ``%`` form (psycopg's to bind). psycopg reads ``%s`` and
    ``%%`` the same way, string literals or not.

    >>> _chunks("SELECT %s, '%%', %s")
    ('SELECT ', ", '%', ", '')
    >>> _chunks("SELECT %(a)s") is None
    True
    """
    out = [""]
    for part in _PLACEHOLDER.split(query):
        if part == "%%":
            out[-1] += "%"
        elif part == "%s":
            out.append("")
        elif "%" in part:
            return None
        else:
            out[-1] += part
    return tuple(out)


def literal(value: Any) -> str | None:
    r"""``value`` as a PostgreSQL literal, as psycopg writes it; ``None`` for another type.

    A string is quoted (an ``E''`` literal, its backslashes doubled, when it holds one: the
    same text whatever ``standard_conforming_strings`` says); a negative integer has a space
    before its sign (never ``--``); the smallest bigint is quoted (psycopg writes `` -N``,
    which PostgreSQL reads as ``-(N)``, and ``N`` overflows), PostgreSQL casting it where used.

    >>> literal("it's"), literal("a\\b"), literal(-5), literal(None), literal(True)
    ("'it''s'", " E'a\\\\b'", ' -5', 'NULL', 'true')
    >>> literal(-(2**63)), literal(-1.5), literal(float("inf")), literal(b"")
    ("'-9223372036854775808'", ' -1.5', "'Infinity'::float8", None)
    """
    kind = type(value)
    if kind is str:
        text: str = value
        if "\\" in text:
            return " E'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
        return "'" + text.replace("'", "''") + "'"
    if kind is int:
        if value >= 0:
            return str(value)
        return f"'{value}'" if value == _INT8_MIN else f" {value}"
    if value is None:
        return "NULL"
    if kind is bool:
        return "true" if value else "false"
    if kind is float:  # a task's backoff multiplier
        text = repr(value)
        special = _FLOAT_SPECIAL.get(text)
        if special is not None:
            return special
        return f" {text}" if text[0] == "-" else text
    return None


_FLOAT_SPECIAL = {
    "inf": "'Infinity'::float8",
    "-inf": "'-Infinity'::float8",
    "nan": "'NaN'::float8",
}
