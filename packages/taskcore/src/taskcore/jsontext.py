"""JSON text: the bounded strict parser, the tree check every door applies, compact output.

Standard library only (no attrs or cattrs), so a command-line client or a Stop hook can parse
and check JSON without loading the codec. :mod:`taskcore.codec` re-exports
:func:`parse_json`, :func:`validate_tree` and :func:`dumps`.

>>> parse_json(b'{"version": 1, "rows": []}')
{'version': 1, 'rows': []}
>>> parse_json(b'{"a": 1e400}')
Traceback (most recent call last):
taskcore.errors.TaskError: a number is not finite (NaN, Infinity or beyond 1.8e308); send a finite number at $.a
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from typing import Any

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import JSON_MAX_DEPTH, REQUEST_BODY_MAX_BYTES

__all__ = ["dumps", "parse_json", "validate_tree"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise TaskError(ErrorCode.MALFORMED_JSON, f"duplicate object key {key!r}; send it once")
        seen.add(key)
    raise AssertionError("unreachable: a shorter dict means a repeated key")  # pragma: no cover


def _constant(name: str) -> float:
    # NaN and Infinity are not JSON; they are kept as floats here so that validate_tree
    # refuses them with the path of the value, like 1e400 (which json reads as infinity).
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


Crumb = tuple[Any, "str | int"] | None
"""A path into a JSON tree as a linked list (parent crumb, key or index), rendered on error."""


def _render(crumb: Crumb) -> str:
    keys: list[str | int] = []
    while crumb is not None:
        crumb, key = crumb
        keys.append(key)
    path = "$"
    for key in reversed(keys):
        path = f"{path}[{key}]" if isinstance(key, int) else _key_path(path, key)
    return path


def validate_tree(value: Any, *, max_depth: int = JSON_MAX_DEPTH) -> None:
    r"""Refuse a decoded JSON tree that JSON text could not carry or storage could not keep.

    Every door's input passes here once, whether it arrived as bytes (:func:`parse_json`)
    or already as a tree (MCP tool arguments, in-process dictionaries, through
    :meth:`Codec.decode`): a number that is not finite (``NaN``, ``Infinity``, ``1e400``),
    a string or key holding a lone surrogate (``"\ud800"``), a key that is not a string or
    a value of no JSON type is ``BAD_INPUT`` with the JSON path of the value; nesting deeper
    than ``max_depth`` containers is ``OUT_OF_BOUNDS``.

    >>> validate_tree({"a": [1, 2.5, "x", None, True]})
    >>> validate_tree({"a": [1, float("inf")]})
    Traceback (most recent call last):
    taskcore.errors.TaskError: a number is not finite (NaN, Infinity or beyond 1.8e308); send a finite number at $.a[1]
    """
    if _clean(value, max_depth):
        return
    _report(value, max_depth)
    raise TaskError(ErrorCode.BAD_INPUT, "the document holds a value JSON cannot carry")


def _clean(value: Any, max_depth: int) -> bool:
    """The fast pass: whether the tree is acceptable (no paths are built)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        kind = type(node)
        if kind is str:
            if _SURROGATE.search(node):
                return False
        elif kind is float:
            if not math.isfinite(node):
                return False
        elif kind is dict:
            if level > max_depth:
                return False
            for key, child in node.items():
                if type(key) is not str or _SURROGATE.search(key):
                    return False
                if type(child) in _CONTAINERS or type(child) is str or type(child) is float:
                    stack.append((child, level + 1))
                elif not (child is None or type(child) is int or type(child) is bool):
                    return False
        elif kind is list or kind is tuple:
            if level > max_depth:
                return False
            stack.extend((child, level + 1) for child in node)
        elif not (kind is int or kind is bool or node is None):
            return False
    return True


_CONTAINERS = (dict, list, tuple)


def _report(value: Any, max_depth: int) -> None:
    """The slow pass, only for a tree the fast pass refused: raise with the value's path."""
    stack: list[tuple[Any, int, Crumb]] = [(value, 1, None)]
    while stack:
        node, level, crumb = stack.pop()
        kind = type(node)
        if kind is str:
            if _SURROGATE.search(node):
                raise TaskError(
                    ErrorCode.BAD_INPUT,
                    "a string holds a lone surrogate (U+D800..U+DFFF); send valid Unicode",
                    path=_render(crumb),
                )
        elif kind is float:
            if not math.isfinite(node):
                raise TaskError(
                    ErrorCode.BAD_INPUT,
                    "a number is not finite (NaN, Infinity or beyond 1.8e308); send a finite "
                    "number",
                    path=_render(crumb),
                )
        elif kind is dict:
            if level > max_depth:
                raise TaskError(
                    ErrorCode.OUT_OF_BOUNDS,
                    f"document nests deeper than {max_depth} levels",
                    path=_render(crumb),
                )
            for key, child in node.items():
                if type(key) is not str:
                    raise TaskError(
                        ErrorCode.BAD_INPUT,
                        "an object key is not a string; JSON keys are strings",
                        path=_render(crumb),
                    )
                if _SURROGATE.search(key):
                    raise TaskError(
                        ErrorCode.BAD_INPUT,
                        "an object key holds a lone surrogate (U+D800..U+DFFF); send valid Unicode",
                        path=_render(crumb),
                    )
                stack.append((child, level + 1, (crumb, key)))
        elif kind is list or kind is tuple:
            if level > max_depth:
                raise TaskError(
                    ErrorCode.OUT_OF_BOUNDS,
                    f"document nests deeper than {max_depth} levels",
                    path=_render(crumb),
                )
            stack.extend((child, level + 1, (crumb, i)) for i, child in enumerate(node))
        elif not (kind is int or kind is bool or node is None):
            raise TaskError(
                ErrorCode.BAD_INPUT,
                f"a value of type {kind.__name__} is not JSON",
                path=_render(crumb),
            )


def parse_json(
    raw: bytes | str, *, max_bytes: int = REQUEST_BODY_MAX_BYTES, max_depth: int = JSON_MAX_DEPTH
) -> Any:
    """Parse one JSON document strictly: bounded, UTF-8, no duplicate keys, no BOM.

    The tree must pass :func:`validate_tree` (finite numbers, no lone surrogates, bounded
    depth).

    >>> parse_json(b'{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> parse_json(b'{"a": 1, "a": 2}')
    Traceback (most recent call last):
    taskcore.errors.TaskError: duplicate object key 'a'; send it once
    """
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > max_bytes:
        raise TaskError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"document is {size} bytes; the limit is {max_bytes} bytes",
        )
    data: bytes | None = None
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if data.startswith(b"\xef\xbb\xbf"):
            raise TaskError(ErrorCode.MALFORMED_JSON, "document starts with a BOM; remove it")
        compact = _compact(data, max_depth)
        if compact is not None:
            return compact
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise TaskError(ErrorCode.MALFORMED_JSON, "document is not valid UTF-8") from None
    else:
        text = raw
    refused: list[str] = []

    def constant(name: str) -> float:
        refused.append(name)
        return _constant(name)

    def number(text: str) -> float:
        value = float(text)
        if value - value != 0.0:  # inf - inf is nan; a finite float gives 0.0
            refused.append(text)
        return value

    try:
        value = json.loads(
            text, object_pairs_hook=_no_duplicates, parse_constant=constant, parse_float=number
        )
    except TaskError:
        raise
    except RecursionError:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS, f"document nests deeper than {JSON_MAX_DEPTH} levels"
        ) from None
    except ValueError as exc:
        raise TaskError(ErrorCode.MALFORMED_JSON, f"document is not valid JSON: {exc}") from None
    if data is None or refused or not _plain(data, max_depth):
        validate_tree(value, max_depth=max_depth)
    return value


# What validate_tree refuses can come out of strictly decoded UTF-8 JSON text in three ways
# only, each visible while parsing: a lone surrogate only as a \uD800-\uDFFF escape; a number
# that is not finite only as NaN/Infinity or as a float beyond 1.8e308 (the parse_constant and
# parse_float hooks above see both); nesting deeper than ``max_depth`` only with more than
# ``max_depth`` opening brackets. When the bytes could hold one of them the tree is walked as
# before, so the walk decides and reports the JSON path; the checks here only skip the walk
# for a document that cannot hold any.
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
_PAIR = re.compile(rb"\[\]|\{\}")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def _plain(data: bytes, max_depth: int) -> bool:
    r"""Whether valid JSON ``data`` has no surrogate escape and nests at most ``max_depth``.

    >>> _plain(b'{"a": [[1], "[[[", {"b": "x"}]}', 3)
    True
    >>> _plain(b'[[[[]]]]', 3), _plain(b'["\\ud800"]', 3)
    (False, False)
    """
    if _ESCAPED_SURROGATE.search(data) is not None:
        return False
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return True
    # The brackets outside strings, innermost pairs removed one layer per round: the rounds
    # needed to empty it are the nesting depth.
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    for _ in range(max_depth):
        if not brackets:
            return True
        brackets = _PAIR.sub(b"", brackets)
    return not brackets


def _compact(data: bytes, max_depth: int) -> Any:
    r"""The tree of a document in compact form, or ``None`` (then the parse below decides).

    What our own clients send (``dumps``: no whitespace, raw UTF-8, declared key order) is
    parsed by orjson, about three times faster, and accepted only if encoding the tree again
    gives back exactly ``data``: then the text had no duplicate key (one would be lost), no
    lone surrogate, NaN or number beyond 1.8e308 (orjson refuses those), no integer beyond
    64 bits (it would come back as a float), and is JSON that the standard parser reads into
    the same tree. Nesting is bounded as below. Anything else returns ``None``.

    Only where orjson is already loaded (the service loads it with
    :mod:`taskcore.canonical`): importing it costs more than a command-line client or a
    hook saves by it. The answer is the same either way.

    >>> import orjson
    >>> _compact(b'{"a":[1,"\xc3\xa9",null]}', 64)
    {'a': [1, 'é', None]}
    >>> _compact(b'{"a":1,"a":2}', 64) is None, _compact(b'{"a": 1}', 64) is None
    (True, True)
    """
    orjson = sys.modules.get("orjson")
    if orjson is None:
        return None
    if data[:2] not in (b'{"', b"{}", b"[]", b'["') and not (
        data[:1] == b"[" and data[1:2] in b"-0123456789[{tfn"
    ):
        return None
    if data.count(b"[") + data.count(b"{") > max_depth:
        return None
    try:
        tree = orjson.loads(data)
        same = orjson.dumps(tree) == data
    except Exception:  # not JSON as orjson reads it: the standard parser reports why
        return None
    return tree if same else None


def dumps(value: Any) -> bytes:
    """Encode a plain JSON tree compactly as UTF-8 (responses; not the canonical signing bytes).

    A tree of strings, integers, booleans, nulls, objects with string keys and arrays only
    (no float, nothing else) is encoded by orjson where it is loaded (a service loads it),
    about ten times faster: for exactly those values its bytes are the standard encoder's
    (the same escapes for every code point, the same integer digits; ``tests/taskcore/
    test_jsontext.py`` holds them to it). Anything else, and anything orjson refuses (an
    integer beyond 64 bits, a lone surrogate), is the standard encoder's, as it always was.
    """
    orjson = sys.modules.get("orjson")
    if orjson is not None and _orjson_plain(value):
        # Refused (out of its range, a JSONEncodeError): the standard encoder answers.
        with contextlib.suppress(TypeError):
            return bytes(orjson.dumps(value))
    return _ENCODE(value).encode("utf-8")


def loads(data: str | bytes) -> Any:
    """Read trusted JSON (text this process or its journal wrote, a response body).

    With orjson where a service loaded it: it reads such text into what ``json.loads``
    reads; what it refuses (an integer beyond 64 bits, a lone surrogate, ``1e400``, deeper
    nesting) is read by ``json.loads``, as before. Not the strict request parser
    (:func:`parse_json`): duplicate keys and non-finite numbers are not refused here.
    """
    orjson = sys.modules.get("orjson")
    if orjson is not None:
        with contextlib.suppress(ValueError):
            return orjson.loads(data)
    return json.loads(data)


_PLAIN_CONTAINERS_MAX = 4096
"""Containers :func:`dumps` looks at before it leaves a tree to the standard encoder."""


def _orjson_plain(value: Any) -> bool:
    """Whether ``value`` holds only the JSON types whose orjson bytes are the standard's."""
    kind = type(value)
    if kind is not dict and kind is not list and kind is not tuple:
        return kind is str or kind is int or kind is bool or value is None
    stack = [value]
    budget = _PLAIN_CONTAINERS_MAX  # a tree that refers to itself must not walk for ever
    while stack:
        budget -= 1
        if budget < 0:
            return False
        node = stack.pop()
        children = node
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    return False
            children = node.values()
        for child in children:
            kind = type(child)
            if kind is dict or kind is list or kind is tuple:
                stack.append(child)
            elif not (kind is str or kind is int or kind is bool or child is None):
                return False
    return True


# ``json.dumps`` with these options builds a new encoder on every call; one does for all
# (an encoder keeps no state between calls).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _key_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"
