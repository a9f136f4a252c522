r"""Canonical bytes: the exact compact JSON the observation digest is computed over.

This is the serialization "Observation signing bytes" specifies, which is the struct
serialization of the origin implementation and *not* RFC 8785:

* objects keep declared struct-field order (attrs field order), never sorted keys;
* no insignificant whitespace, no BOM, no trailing newline;
* strings escape ``"`` and ``\`` as ``\"`` and ``\\``, and the five named controls as
  ``\b \t \n \f \r``; every other U+0000..U+001F is a lowercase ``\u00xx`` (``\u001f``,
  never ``\u001F``); every other character, including ``/``, DEL,
  U+2028, U+2029, non-ASCII and emoji, is emitted as raw UTF-8 without normalization;
* integers are base-10 digits with no sign, fraction or exponent, the full u64 range
  (negative integers are refused: the contract has none);
* enums are their declared snake_case value; ``None`` is ``null``; tuples are arrays;
* a field declared with ``omit_none`` (``taskcore.codec.wire_field``) is left out while it is
  ``None``, so adding such a field to a pinned type changes no earlier value's bytes.

>>> canonical_json({"a": "x/y\u2028", "b": [0, 2**64 - 1], "c": None})
b'{"a":"x/y\xe2\x80\xa8","b":[0,18446744073709551615],"c":null}'
>>> canonical_json("tab\there\x01\x7f")
b'"tab\\there\\u0001\x7f"'
"""

from __future__ import annotations

import enum
import functools
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import U64_MAX
from taskcore.wirefield import FIELD_RULES_KEY, FieldRules

__all__ = ["canonical_json", "canonical_json_replacing", "canonical_value", "encode_string"]

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_TABLE = {i: _ESCAPES.get(chr(i), f"\\u{i:04x}") for i in range(0x20)}
_TABLE[ord('"')] = '\\"'
_TABLE[ord("\\")] = "\\\\"
# Most strings need no escaping at all; finding that out with one regex search is much
# cheaper than running ``str.translate`` over every character.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_FIELD_KEYS: dict[type, tuple[tuple[str, bytes, bool], ...]] = {}


def _omit_none(field: attrs.Attribute[Any]) -> bool:
    rules = field.metadata.get(FIELD_RULES_KEY)
    return isinstance(rules, FieldRules) and rules.omit_none


def _field_keys(cls: type) -> tuple[tuple[str, bytes, bool], ...]:
    """An attrs class's attribute names, encoded keys and omit-when-None flags, in order."""
    keys = _FIELD_KEYS.get(cls)
    if keys is None:
        keys = tuple(
            (f.name, encode_string(f.name) + b":", _omit_none(f)) for f in attrs.fields(cls)
        )
        _FIELD_KEYS[cls] = keys
    return keys


def encode_string(text: str) -> bytes:
    """Return the canonical JSON string literal for ``text`` as UTF-8 bytes.

    Lone surrogates cannot be encoded as UTF-8 and are refused with ``INVALID_VALUE``.
    """
    escaped = '"' + (text.translate(_TABLE) if _NEEDS_ESCAPE.search(text) else text) + '"'
    try:
        return escaped.encode("utf-8")
    except UnicodeEncodeError:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "string contains a lone surrogate, which is not valid Unicode text",
        ) from None


def canonical_value(obj: Any) -> Any:
    """Return the plain JSON tree (dicts in declared order) for an attrs instance or value."""
    if attrs.has(type(obj)):
        return {
            name: canonical_value(getattr(obj, name))
            for name, _, omit in _field_keys(type(obj))
            if not (omit and getattr(obj, name) is None)
        }
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, tuple | list):
        return [canonical_value(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): canonical_value(v) for k, v in obj.items()}
    return obj


def _emit(obj: Any, out: list[bytes]) -> None:
    if obj is None:
        out.append(b"null")
    elif obj is True:
        out.append(b"true")
    elif obj is False:
        out.append(b"false")
    elif isinstance(obj, str):
        out.append(encode_string(obj))
    elif isinstance(obj, int):
        if obj < 0 or obj > U64_MAX:
            raise TaskError(ErrorCode.OUT_OF_BOUNDS, f"integer {obj} is outside 0..2^64-1")
        out.append(str(obj).encode("ascii"))
    elif isinstance(obj, enum.Enum):
        _emit(obj.value, out)
    elif attrs.has(type(obj)):
        out.append(b"{")
        first = True
        for name, key, omit in _field_keys(type(obj)):
            value = getattr(obj, name)
            if omit and value is None:
                continue
            if not first:
                out.append(b",")
            first = False
            out.append(key)
            _emit(value, out)
        out.append(b"}")
    elif isinstance(obj, Mapping):
        out.append(b"{")
        for i, (key, value) in enumerate(obj.items()):
            if i:
                out.append(b",")
            if not isinstance(key, str):
                raise TaskError(ErrorCode.WRONG_TYPE, "object keys must be strings")
            out.append(encode_string(key))
            out.append(b":")
            _emit(value, out)
        out.append(b"}")
    elif isinstance(obj, tuple | list):
        out.append(b"[")
        for i, value in enumerate(obj):
            if i:
                out.append(b",")
            _emit(value, out)
        out.append(b"]")
    else:
        raise TaskError(
            ErrorCode.WRONG_TYPE,
            f"{type(obj).__name__} has no canonical encoding (floats are not part of the contract)",
        )


def canonical_json(obj: Any) -> bytes:
    """Return the canonical bytes of an attrs instance, mapping, sequence or scalar."""
    try:
        return _orjson_dumps()(_tree(obj))
    except Exception:  # noqa: S110 - the exact encoder below decides and reports
        pass
    out: list[bytes] = []
    _emit(obj, out)
    return b"".join(out)


def canonical_json_replacing(obj: Any, name: str, value: Any) -> bytes:
    """``canonical_json(attrs.evolve(obj, **{name: value}))`` without building the copy.

    For a field that is always written (not ``omit_none``): its key keeps its place and
    gets ``value``'s encoding. Anything else takes the copy. The copy is not validated again
    here, so use it only where the replacement cannot make ``obj`` invalid (a signature left
    out of the bytes it signs).

    >>> import attrs
    >>> @attrs.frozen
    ... class Signed:
    ...     text: str
    ...     signature: str | None
    >>> canonical_json_replacing(Signed("hi", "ab12"), "signature", None)
    b'{"text":"hi","signature":null}'
    """
    try:
        tree = _tree(obj)
        if name in tree and not any(n == name and omit for n, _, omit in _field_keys(type(obj))):
            tree[name] = _tree(value)
            return _orjson_dumps()(tree)
    except Exception:  # noqa: S110 - the copy below decides and reports
        pass
    return canonical_json(attrs.evolve(obj, **{name: value}))


# The fast path. For a plain tree of exact ``str``, ``bool``, ``None``, u64 ``int``, ``list``
# and ``dict`` with string keys, ``orjson.dumps`` (no options) writes exactly the bytes
# ``_emit`` writes, as the standard library's ``json.dumps(ensure_ascii=False,
# separators=(",", ":"))`` does, about twenty times faster than the latter: the same escapes
# (``\"``, ``\\``, the five named controls, every other control as lowercase ``\u00xx``),
# everything else as raw UTF-8, no whitespace. ``_tree`` builds that tree (attrs fields in
# declared order, ``omit_none`` fields left out while ``None``, enums as their values) and
# raises for anything else (a float, a negative or too-large integer, a subclass, a
# non-string key); orjson refuses a lone surrogate. Then ``_emit`` runs instead and decides,
# so its errors and their order are unchanged. tests/taskcore/test_canonical.py checks both
# paths agree on generated values; the golden vectors check the bytes.


@functools.cache
def _orjson_dumps() -> Callable[[Any], bytes]:
    """``orjson.dumps``, imported on first use (it costs ~24 ms; a Stop hook never needs it)."""
    import orjson

    dumps: Callable[[Any], bytes] = orjson.dumps
    return dumps


class _NotPlainError(Exception):
    """A value the fast path leaves to :func:`_emit`."""


def _tree(obj: Any) -> Any:
    kind = type(obj)
    if kind is str or kind is bool or obj is None:
        return obj
    if kind is int:
        if 0 <= obj <= U64_MAX:
            return obj
        raise _NotPlainError
    if kind is tuple or kind is list:
        return [v if type(v) is str else _tree(v) for v in obj]
    if kind is dict:
        out = {}
        for key, value in obj.items():
            if type(key) is not str:
                raise _NotPlainError
            out[key] = _tree(value)
        return out
    convert = _CONVERTERS.get(kind)
    if convert is None:
        convert = _converter(kind)
    return convert(obj)


_CONVERTERS: dict[type, Callable[[Any], Any]] = {}


def _converter(kind: type) -> Callable[[Any], Any]:
    """The tree function of an attrs class or a string-valued enum (built once per class)."""
    if attrs.has(kind):
        convert: Callable[[Any], Any] = _class_converter(kind)
    elif issubclass(kind, enum.Enum) and not issubclass(kind, int | str):

        def member(obj: Any) -> Any:
            if type(obj.value) is not str:
                raise _NotPlainError
            return obj.value

        convert = member
    else:
        raise _NotPlainError
    _CONVERTERS[kind] = convert
    return convert


def _class_converter(kind: type) -> Callable[[Any], Any]:
    """Generate the tree function of an attrs class: straight-line code per field.

    A field whose value has its declared simple type (``str``, ``int`` in range, a
    string-valued enum, ``tuple[str, ...]``, possibly ``None``) is converted inline; any other
    value goes through :func:`_tree`, which handles (or refuses) everything.
    """
    try:
        hints = {f.name: f.type for f in attrs.fields(attrs.resolve_types(kind))}
    except Exception:  # unresolvable annotations: every field through _tree
        hints = {}
    env: dict[str, Any] = {
        "tree": _tree,
        "U64_MAX": U64_MAX,
        "known": _CONVERTERS.get,
        "make": _converter,
    }
    lines = ["def fields(obj):", "    out = {}"]
    for i, (name, _, omit) in enumerate(_field_keys(kind)):
        lines.append(f"    x = obj.{name}")
        body = _field_code(i, hints.get(name), env)
        if omit:
            lines.append("    if x is not None:")
            lines.extend(f"        {line}" for line in body)
            lines.append(f"        out[{name!r}] = x")
        else:
            lines.extend(f"    {line}" for line in body)
            lines.append(f"    out[{name!r}] = x")
    lines.append("    return out")
    source = "\n".join(lines)
    exec(compile(source, f"<canonical tree {kind.__qualname__}>", "exec"), env)  # noqa: S102 - generated from attrs field declarations only
    return typing.cast(Callable[[Any], Any], env["fields"])


def _field_code(i: int, tp: Any, env: dict[str, Any]) -> list[str]:
    """Lines turning ``x`` (one field's value) into its tree value, in place."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            inner = _field_code(i, rest[0], env)
            return ["if x is not None:", *(f"    {line}" for line in inner)]
    if tp is str:
        return ["if type(x) is not str: x = tree(x)"]
    if tp is int:
        return ["if type(x) is not int or x < 0 or x > U64_MAX: x = tree(x)"]
    if (
        isinstance(tp, type)
        and issubclass(tp, enum.Enum)
        and not issubclass(tp, int | str)
        and all(type(m.value) is str for m in tp)
    ):
        env[f"E{i}"] = tp
        return [f"x = x._value_ if type(x) is E{i} else tree(x)"]
    if tp == tuple[str, ...]:
        return [
            "if type(x) is tuple: x = [y if type(y) is str else tree(y) for y in x]",
            "else: x = tree(x)",
        ]
    if isinstance(tp, type) and attrs.has(tp):
        env[f"K{i}"] = tp
        return [f"x = (known(K{i}) or make(K{i}))(x) if type(x) is K{i} else tree(x)"]
    item = typing.get_args(tp)
    if (
        typing.get_origin(tp) is tuple
        and len(item) == 2
        and item[1] is Ellipsis
        and isinstance(item[0], type)
        and attrs.has(item[0])
    ):
        env[f"K{i}"] = item[0]
        return [
            "if type(x) is tuple:",
            f"    f = known(K{i}) or make(K{i})",
            f"    x = [f(y) if type(y) is K{i} else tree(y) for y in x]",
            "else: x = tree(x)",
        ]
    return ["x = tree(x)"]
