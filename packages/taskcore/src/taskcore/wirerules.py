"""The wire rule table: :class:`FieldRules` and the checks that read it.

Every wire field declares its rules once (:func:`taskcore.wirefield.wire_field` stores a
:class:`FieldRules` in the field's metadata). Two places check them, with the functions of
this module:

* decoding (:mod:`taskcore.codec` and its fast path, :mod:`taskcore.fastdecode`) checks each
  raw JSON value before it is structured, so every refusal carries the value's JSON path;
* construction: the attrs validator :func:`~taskcore.wirefield.wire_field` attaches runs the
  same rules on the value a program passes, so a value that decoding refuses cannot be built
  either.

attrs only (no cattrs), like :mod:`taskcore.wirefield`.

>>> check_rules("x" * 9, FieldRules(max_len=8))
Traceback (most recent call last):
taskcore.errors.TaskError: 9 characters; at most 8 are allowed
>>> char_run("[0-9a-f]{64}")
('0123456789abcdef', 64, 64)
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, Literal, get_args, get_origin

import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.jsontext import _SURROGATE
from taskcore.limits import U64_MAX

__all__ = [
    "SCHEMA_VERSION",
    "FieldRules",
    "char_run",
    "check_int_items",
    "check_rules",
    "compiled",
    "int_ranged",
    "is_dict",
    "is_enum",
    "is_int_tuple",
    "is_literal",
    "is_var_tuple",
    "item_rules",
    "json_type",
    "ranged_rules",
    "rule_test",
    "text_refusals",
    "wrong_type",
]

SCHEMA_VERSION = 1
"""The only wire schema version this implementation speaks."""


@attrs.frozen(kw_only=True)
class FieldRules:
    """Per-field wire rules, checked while decoding and published in JSON Schemas.

    ``max_len``/``min_len`` count characters of a string or items of an array. ``lo``/``hi``
    bound an integer (default ``0..2^64-1``: the contract's integers are unsigned).
    ``item_*`` rules apply to each string of a ``tuple[str, ...]``. ``wire`` renames the
    field on the wire (the queue's camelCase). ``version`` marks the schema-version field.
    ``omit_none`` (only for a field whose default is ``None``) leaves the key out of the
    encoded and canonical bytes while the value is ``None``: a field added to an already
    pinned type keeps every earlier value's bytes (and digest) unchanged.
    """

    wire: str | None = None
    min_len: int | None = None
    max_len: int | None = None
    pattern: str | None = None
    lo: int | None = 0
    hi: int | None = U64_MAX
    item_min_len: int | None = None
    item_max_len: int | None = None
    item_pattern: str | None = None
    version: bool = False
    doc: str | None = None
    omit_none: bool = False


# -- JSON types -------------------------------------------------------------------------------

_JSON_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def json_type(value: Any) -> str:
    """The JSON name of a value's type (``object``, ``array``, ``string``, ...)."""
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def wrong_type(value: Any, expected: str) -> TaskError:
    """The ``WRONG_TYPE`` refusal of ``value`` where ``expected`` (``"a string"``) belongs."""
    return TaskError(
        ErrorCode.WRONG_TYPE, f"expected {expected}, got {json_type(value)}; send {expected}"
    )


def is_enum(tp: Any) -> bool:
    """Whether ``tp`` is an enum class."""
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def is_literal(tp: Any) -> bool:
    """Whether ``tp`` is a ``Literal[...]``."""
    return get_origin(tp) is Literal


def is_var_tuple(tp: Any) -> bool:
    """Whether ``tp`` is ``tuple[X, ...]`` (a JSON array)."""
    args = get_args(tp)
    return get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis


def is_dict(tp: Any) -> bool:
    """Whether ``tp`` is ``dict`` or ``dict[K, V]`` (a free JSON object)."""
    return tp is dict or get_origin(tp) is dict


# -- per-field rules --------------------------------------------------------------------------


@cache
def compiled(pattern: str) -> re.Pattern[str]:
    """The compiled ``pattern`` (each compiled once)."""
    return re.compile(pattern)


@cache
def item_rules(rules: FieldRules) -> FieldRules:
    """The rules each string item of an array field obeys (built once per field)."""
    return FieldRules(
        max_len=rules.item_max_len, min_len=rules.item_min_len, pattern=rules.item_pattern
    )


def check_rules(value: Any, rules: FieldRules) -> None:
    """Check a raw JSON value against its field's rules, before it is structured."""
    if rules.version:
        if type(value) is not int:
            raise wrong_type(value, "an integer")
        if value != SCHEMA_VERSION:
            raise TaskError(
                ErrorCode.UNSUPPORTED_VERSION,
                f"schema version {value} is not supported; this server speaks version "
                f"{SCHEMA_VERSION}",
            )
        return
    kind = type(value)
    if kind is str or kind is list:
        what = "characters" if kind is str else "items"
        if rules.max_len is not None and len(value) > rules.max_len:
            raise TaskError(
                ErrorCode.OUT_OF_BOUNDS,
                f"{len(value)} {what}; at most {rules.max_len} are allowed",
            )
        if rules.min_len is not None and len(value) < rules.min_len:
            raise TaskError(
                ErrorCode.OUT_OF_BOUNDS,
                f"{len(value)} {what}; at least {rules.min_len} are required",
            )
        if kind is str:
            if rules.pattern is not None and compiled(rules.pattern).fullmatch(value) is None:
                raise TaskError(
                    ErrorCode.INVALID_VALUE, f"value does not match the pattern {rules.pattern}"
                )
            return
        if (
            rules.item_max_len is not None
            or rules.item_min_len is not None
            or rules.item_pattern is not None
        ):
            each = item_rules(rules)
            for index, item in enumerate(value):
                if type(item) is not str:
                    continue  # the item hook reports the wrong type with its path
                try:
                    check_rules(item, each)
                except TaskError as err:
                    raise err.at(f"$[{index}]") from None
        return
    if kind is int:
        if rules.lo is not None and value < rules.lo:
            raise TaskError(ErrorCode.OUT_OF_BOUNDS, f"{value} is below the minimum {rules.lo}")
        if rules.hi is not None and value > rules.hi:
            raise TaskError(ErrorCode.OUT_OF_BOUNDS, f"{value} is above the maximum {rules.hi}")


def check_int_items(value: Any, rules: FieldRules) -> None:
    """Bound the integer items of a ``tuple[int, ...]`` by the field's ``lo``/``hi`` (u64).

    Items of another JSON type are left to the item hook, which reports ``WRONG_TYPE``.
    """
    if not isinstance(value, list):
        return
    bounds = FieldRules(lo=rules.lo, hi=rules.hi)
    for index, item in enumerate(value):
        if type(item) is int:
            try:
                check_rules(item, bounds)
            except TaskError as err:
                raise err.at(f"$[{index}]") from None


def is_int_tuple(tp: Any) -> bool:
    """Whether ``tp`` is ``tuple[int, ...]``."""
    return is_var_tuple(tp) and get_args(tp)[0] is int


def int_ranged(tp: Any) -> bool:
    """Whether a field's ``lo``/``hi`` bound its integers.

    Only ``int`` fields (``None`` allowed) and ``tuple[int, ...]`` fields: the JSON Schema
    publishes ``minimum``/``maximum`` for exactly these. A free JSON field (``Any``) or a
    ``float`` field carries the default rules too, and applying their 0..2^64-1 range there
    refused a top-level ``-1`` the schema allows (a nested one was always accepted).
    """
    if get_origin(tp) in (typing.Union, types.UnionType):
        return any(int_ranged(arg) for arg in get_args(tp) if arg is not type(None))
    return tp is int or is_int_tuple(tp)


def ranged_rules(rules: FieldRules, tp: Any) -> FieldRules:
    """``rules`` as they apply to a value of declared type ``tp`` (see :func:`int_ranged`)."""
    if rules.version or int_ranged(tp) or (rules.lo is None and rules.hi is None):
        return rules
    return attrs.evolve(rules, lo=None, hi=None)


# -- the rule test: one specialised predicate per field ------------------------------------


def rule_test(rules: FieldRules, tp: Any) -> Callable[[Any], bool] | None:
    """A test equivalent to ``check_rules`` (and ``check_int_items``) passing, or ``None``.

    ``tp`` (the declared type, ``None`` stripped) only narrows which JSON types can reach the
    structure hook afterwards; a value of another type is refused by that hook anyway.
    """
    if rules.version:
        return lambda v: type(v) is int and v == SCHEMA_VERSION
    lo, hi, least, most = rules.lo, rules.hi, rules.min_len, rules.max_len
    full = compiled(rules.pattern).fullmatch if rules.pattern is not None else None
    has_items = (
        rules.item_max_len is not None
        or rules.item_min_len is not None
        or rules.item_pattern is not None
    )
    item_ok = rule_test(item_rules(rules), str) if has_items else None
    int_items = is_int_tuple(tp)

    def text_ok(v: str) -> bool:
        n = len(v)
        return (
            (most is None or n <= most)
            and (least is None or n >= least)
            and (full is None or full(v) is not None)
        )

    def int_ok(v: int) -> bool:
        return (lo is None or v >= lo) and (hi is None or v <= hi)

    if tp is str:
        return None if most is None and least is None and full is None else text_ok
    if tp is bool:
        return None
    if tp is int:
        return None if lo is None and hi is None else lambda v: type(v) is not int or int_ok(v)

    def ok(v: Any) -> bool:
        kind = type(v)
        if kind is str:
            return text_ok(v)
        if kind is int:
            return int_ok(v)
        if kind is list:
            n = len(v)
            if (most is not None and n > most) or (least is not None and n < least):
                return False
            if item_ok is not None and not all(item_ok(i) for i in v if type(i) is str):
                return False
            return not int_items or all(int_ok(i) for i in v if type(i) is int)
        return True

    return ok


_CHAR_RUN = re.compile(r"\[((?:[A-Za-z0-9]-[A-Za-z0-9]|[A-Za-z0-9._])+-?)\]\{(\d+)(?:,(\d+))?\}")


@cache
def char_run(pattern: str) -> tuple[str, int, int] | None:
    """``(characters, least, most)`` when ``pattern`` is one character class repeated.

    Then ``fullmatch`` succeeds exactly when the length is in range and stripping those
    characters leaves nothing.

    >>> char_run("[0-9a-f]{64}")
    ('0123456789abcdef', 64, 64)
    >>> char_run("[A-Za-z0-9._-]{1,128}")[1:]
    (1, 128)
    >>> char_run("[a-z]+") is None
    True
    """
    found = _CHAR_RUN.fullmatch(pattern)
    if found is None:
        return None
    body, least, most = found.group(1), int(found.group(2)), found.group(3)
    chars: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            chars.extend(chr(c) for c in range(ord(body[i]), ord(body[i + 2]) + 1))
            i += 3
        else:
            chars.append(body[i])
            i += 1
    return "".join(dict.fromkeys(chars)), least, int(most) if most is not None else least


def text_refusals(
    name: str, key: str, rules: FieldRules, env: dict[str, Any], *, surrogates: bool
) -> list[str]:
    """Conditions (Python source) under which the string ``name`` breaks ``rules``.

    Generated code (the decoding fast path, the construction validators) joins them with
    ``or``; names they need are put into ``env`` under ``key``. ``surrogates`` adds the lone
    surrogate test, for a string no tree check has seen.
    """
    refuse = []
    simple = char_run(rules.pattern) if rules.pattern is not None else None
    if surrogates and simple is None:  # a character run admits only its ASCII characters
        env["search"] = _SURROGATE.search
        refuse.append(f"(not {name}.isascii() and search({name}) is not None)")
    if rules.max_len is not None and (simple is None or simple[2] > rules.max_len):
        refuse.append(f"len({name}) > {rules.max_len!r}")
    if rules.min_len is not None and (simple is None or simple[1] < rules.min_len):
        refuse.append(f"len({name}) < {rules.min_len!r}")
    if simple is not None:  # the same verdict as fullmatch, several times faster
        chars, least, most = simple
        env[f"k{key}"] = chars
        refuse.append(f"len({name}) < {least}")
        refuse.append(f"len({name}) > {most}")
        refuse.append(f"{name}.strip(k{key})")
    elif rules.pattern is not None:
        env[f"p{key}"] = compiled(rules.pattern).fullmatch
        refuse.append(f"p{key}({name}) is None")
    return refuse
