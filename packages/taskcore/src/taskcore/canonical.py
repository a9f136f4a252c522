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
import re
from collections.abc import Mapping
from typing import Any

import attrs

from taskcore.codec import FIELD_RULES_KEY, FieldRules
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import U64_MAX

__all__ = ["canonical_json", "canonical_value", "encode_string"]

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
    out: list[bytes] = []
    _emit(obj, out)
    return b"".join(out)
