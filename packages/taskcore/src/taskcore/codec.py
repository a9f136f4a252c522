"""Strict decoding and plain encoding of wire types.

cattrs is lenient by default (it coerces ``"1"`` to ``1``, ``True`` to ``1``, iterates a
string as a list and ignores unknown keys). :func:`make_converter` builds a converter that
does none of that: every JSON value must already have the declared type, unknown keys are
refused, and the per-field rules declared with :func:`wire_field` (lengths, patterns, integer
ranges, the schema version) are checked while structuring, so every failure carries the JSON
path of the offending value.

Every failure becomes one :class:`~taskcore.errors.TaskError` with a stable code and the JSON
path of the value (``$.criteria[2].outcome``); ``tests/test_codec.py`` shows each case.

>>> parse_json(b'{"version": 1, "rows": []}')
{'version': 1, 'rows': []}
"""

from __future__ import annotations

import enum
import json
import math
import re
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import JSON_MAX_DEPTH, REQUEST_BODY_MAX_BYTES, U64_MAX

__all__ = [
    "FIELD_RULES_KEY",
    "SCHEMA_VERSION",
    "Codec",
    "FieldRules",
    "decode",
    "default_codec",
    "dumps",
    "field_rules",
    "make_converter",
    "parse_json",
    "unstructure",
    "validate_tree",
    "wire_field",
    "wire_name",
]

T = TypeVar("T")

SCHEMA_VERSION = 1
"""The only wire schema version this implementation speaks."""

FIELD_RULES_KEY = "taskcore.rules"
"""attrs metadata key under which :class:`FieldRules` are stored."""

_SURROGATE = re.compile("[\ud800-\udfff]")


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


def wire_field(
    *,
    default: Any = attrs.NOTHING,
    factory: Callable[[], Any] | None = None,
    wire: str | None = None,
    min_len: int | None = None,
    max_len: int | None = None,
    pattern: str | None = None,
    lo: int | None = 0,
    hi: int | None = U64_MAX,
    item_min_len: int | None = None,
    item_max_len: int | None = None,
    item_pattern: str | None = None,
    version: bool = False,
    doc: str | None = None,
    omit_none: bool = False,
) -> Any:
    """Declare an attrs field with wire rules (see :class:`FieldRules`).

    A field without ``default``/``factory`` is required on the wire, even when its type
    admits ``None``: strict decoding wants ``"x": null`` spelled out. ``omit_none`` needs
    ``default=None``.
    """
    if omit_none and default is not None:
        raise TypeError("omit_none needs default=None")
    rules = FieldRules(
        wire=wire,
        min_len=min_len,
        max_len=max_len,
        pattern=pattern,
        lo=lo,
        hi=hi,
        item_min_len=item_min_len,
        item_max_len=item_max_len,
        item_pattern=item_pattern,
        version=version,
        doc=doc,
        omit_none=omit_none,
    )
    metadata = {FIELD_RULES_KEY: rules}
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


def field_rules(field: attrs.Attribute[Any]) -> FieldRules:
    """Return the rules of an attrs field (defaults when it was declared without any)."""
    rules = field.metadata.get(FIELD_RULES_KEY)
    return rules if isinstance(rules, FieldRules) else FieldRules()


def wire_name(field: attrs.Attribute[Any]) -> str:
    """Return the JSON key of an attrs field."""
    return field_rules(field).wire or field.name


# -- JSON text ------------------------------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise TaskError(ErrorCode.MALFORMED_JSON, f"duplicate object key {key!r}; send it once")
        out[key] = value
    return out


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
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if data.startswith(b"\xef\xbb\xbf"):
            raise TaskError(ErrorCode.MALFORMED_JSON, "document starts with a BOM; remove it")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise TaskError(ErrorCode.MALFORMED_JSON, "document is not valid UTF-8") from None
    else:
        text = raw
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_constant)
    except TaskError:
        raise
    except RecursionError:
        raise TaskError(
            ErrorCode.OUT_OF_BOUNDS, f"document nests deeper than {JSON_MAX_DEPTH} levels"
        ) from None
    except ValueError as exc:
        raise TaskError(ErrorCode.MALFORMED_JSON, f"document is not valid JSON: {exc}") from None
    validate_tree(value, max_depth=max_depth)
    return value


def dumps(value: Any) -> bytes:
    """Encode a plain JSON tree compactly as UTF-8 (responses; not the canonical signing bytes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


# -- strict scalar hooks ----------------------------------------------------------------------

_JSON_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _wrong_type(value: Any, expected: str) -> TaskError:
    return TaskError(
        ErrorCode.WRONG_TYPE, f"expected {expected}, got {_json_type(value)}; send {expected}"
    )


def _struct_str(value: Any, _: Any) -> str:
    if type(value) is not str:
        raise _wrong_type(value, "a string")
    if _SURROGATE.search(value):
        raise TaskError(ErrorCode.INVALID_VALUE, "string contains a lone surrogate")
    return value


def _struct_int(value: Any, _: Any) -> int:
    if type(value) is not int:
        raise _wrong_type(value, "an integer")
    return value


def _struct_bool(value: Any, _: Any) -> bool:
    if type(value) is not bool:
        raise _wrong_type(value, "a boolean")
    return value


def _struct_float(value: Any, _: Any) -> float:
    if type(value) is bool or not isinstance(value, int | float):
        raise _wrong_type(value, "a number")
    return float(value)


def _struct_any(value: Any, _: Any) -> Any:
    return value


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _enum_hook(tp: type[enum.Enum]) -> Callable[[Any, Any], enum.Enum]:
    allowed = [m.value for m in tp]

    def hook(value: Any, _: Any) -> enum.Enum:
        if type(value) is not type(allowed[0]):
            raise _wrong_type(value, "a string")
        try:
            return tp(value)
        except ValueError:
            shown = ", ".join(str(a) for a in allowed)
            raise TaskError(ErrorCode.INVALID_VALUE, f"{value!r} is not one of: {shown}") from None

    return hook


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _literal_hook(tp: Any) -> Callable[[Any, Any], Any]:
    allowed = get_args(tp)

    def hook(value: Any, _: Any) -> Any:
        for option in allowed:
            if type(value) is type(option) and value == option:
                return value
        if not any(type(value) is type(option) for option in allowed):
            raise _wrong_type(value, "a string" if isinstance(allowed[0], str) else "a literal")
        shown = ", ".join(repr(a) for a in allowed)
        raise TaskError(ErrorCode.INVALID_VALUE, f"{value!r} is not one of: {shown}")

    return hook


def _is_var_tuple(tp: Any) -> bool:
    args = get_args(tp)
    return get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_dict(tp: Any) -> bool:
    return tp is dict or get_origin(tp) is dict


# -- per-field rules --------------------------------------------------------------------------


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@cache
def _item_rules(rules: FieldRules) -> FieldRules:
    """The rules each string item of an array field obeys (built once per field)."""
    return FieldRules(
        max_len=rules.item_max_len, min_len=rules.item_min_len, pattern=rules.item_pattern
    )


def _check_rules(value: Any, rules: FieldRules) -> None:
    """Check a raw JSON value against its field's rules, before it is structured."""
    if rules.version:
        if type(value) is not int:
            raise _wrong_type(value, "an integer")
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
            if rules.pattern is not None and _compiled(rules.pattern).fullmatch(value) is None:
                raise TaskError(
                    ErrorCode.INVALID_VALUE, f"value does not match the pattern {rules.pattern}"
                )
            return
        if (
            rules.item_max_len is not None
            or rules.item_min_len is not None
            or rules.item_pattern is not None
        ):
            item_rules = _item_rules(rules)
            for index, item in enumerate(value):
                if type(item) is not str:
                    continue  # the item hook reports the wrong type with its path
                try:
                    _check_rules(item, item_rules)
                except TaskError as err:
                    raise err.at(f"$[{index}]") from None
        return
    if kind is int:
        if rules.lo is not None and value < rules.lo:
            raise TaskError(ErrorCode.OUT_OF_BOUNDS, f"{value} is below the minimum {rules.lo}")
        if rules.hi is not None and value > rules.hi:
            raise TaskError(ErrorCode.OUT_OF_BOUNDS, f"{value} is above the maximum {rules.hi}")


def _check_int_items(value: Any, rules: FieldRules) -> None:
    """Bound the integer items of a ``tuple[int, ...]`` by the field's ``lo``/``hi`` (u64).

    Items of another JSON type are left to the item hook, which reports ``WRONG_TYPE``.
    """
    if not isinstance(value, list):
        return
    bounds = FieldRules(lo=rules.lo, hi=rules.hi)
    for index, item in enumerate(value):
        if type(item) is int:
            try:
                _check_rules(item, bounds)
            except TaskError as err:
                raise err.at(f"$[{index}]") from None


def _is_int_tuple(tp: Any) -> bool:
    return _is_var_tuple(tp) and get_args(tp)[0] is int


def make_converter() -> cattrs.Converter:
    """Build the strict converter. Call once per :class:`Codec`; never share a global one."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _struct_str)
    conv.register_structure_hook(int, _struct_int)
    conv.register_structure_hook(bool, _struct_bool)
    conv.register_structure_hook(float, _struct_float)
    conv.register_structure_hook(typing.Any, _struct_any)
    conv.register_structure_hook_factory(_is_enum, _enum_hook)
    conv.register_structure_hook_factory(_is_literal, _literal_hook)

    def tuple_factory(tp: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
        item_type = get_args(tp)[0]
        item_hook = conv.get_structure_hook(item_type)

        def hook(value: Any, _: Any) -> tuple[Any, ...]:
            if type(value) is not list:
                raise _wrong_type(value, "an array")
            out: list[Any] = []
            errors: list[Exception] = []
            for index, item in enumerate(value):
                try:
                    out.append(item_hook(item, item_type))
                except Exception as exc:
                    exc.__notes__ = [
                        *getattr(exc, "__notes__", []),
                        IterableValidationNote(
                            f"Structuring {tp} @ index {index}", index, item_type
                        ),
                    ]
                    errors.append(exc)
                    break
            if errors:
                raise IterableValidationError(f"While structuring {tp!r}", errors, tp)
            return tuple(out)

        return hook

    conv.register_structure_hook_factory(_is_var_tuple, tuple_factory)

    def dict_factory(tp: Any) -> Callable[[Any, Any], dict[str, Any]]:
        def hook(value: Any, _: Any) -> dict[str, Any]:
            if type(value) is not dict:
                raise _wrong_type(value, "an object")
            return dict(value)

        return hook

    conv.register_structure_hook_factory(_is_dict, dict_factory)

    def class_factory(cl: type[Any]) -> Callable[[Any, Any], Any]:
        attrs.resolve_types(cl)
        overrides: dict[str, Any] = {}
        for field in attrs.fields(cl):
            rules = field_rules(field)
            inner = conv.get_structure_hook(field.type) if field.type is not None else None

            def checked(
                value: Any,
                tp: Any,
                _rules: FieldRules = rules,
                _inner: Callable[[Any, Any], Any] | None = inner,
                _int_items: bool = _is_int_tuple(field.type),
            ) -> Any:
                if value is not None:
                    _check_rules(value, _rules)
                    if _int_items:
                        _check_int_items(value, _rules)
                return _inner(value, tp) if _inner is not None else value

            overrides[field.name] = override(rename=rules.wire, struct_hook=checked)
        structure = make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, **overrides)

        def hook(value: Any, tp: Any) -> Any:
            if type(value) is not dict:
                raise _wrong_type(value, "an object")
            return structure(value, tp)

        return hook

    conv.register_structure_hook_factory(attrs.has, class_factory)

    def class_unstructure_factory(cl: type[Any]) -> Callable[[Any], dict[str, Any]]:
        attrs.resolve_types(cl)
        overrides = {
            field.name: override(
                rename=field_rules(field).wire,
                omit_if_default=True if field_rules(field).omit_none else None,
            )
            for field in attrs.fields(cl)
        }
        return make_dict_unstructure_fn(cl, conv, **overrides)  # type: ignore[arg-type]

    conv.register_unstructure_hook_factory(attrs.has, class_unstructure_factory)
    conv.register_unstructure_hook_factory(_is_enum, lambda _: lambda member: member.value)
    return conv


# -- error translation ------------------------------------------------------------------------


def _key_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _child_path(path: str, exc: BaseException, owner: type[Any] | None) -> str:
    for note in getattr(exc, "__notes__", []):
        if isinstance(note, AttributeValidationNote):
            key = note.name
            if owner is not None and attrs.has(owner):
                for field in attrs.fields(owner):
                    if field.name == note.name:
                        key = wire_name(field)
            return _key_path(path, key)
        if isinstance(note, IterableValidationNote):
            return f"{path}[{note.index}]"
    return path


def _translate(exc: BaseException, path: str, owner: type[Any] | None) -> TaskError:
    if isinstance(exc, ClassValidationError):
        cl = exc.cl if attrs.has(exc.cl) else None
        # Report the first missing or unknown field before a type error: it is the likelier fix.
        ordered = sorted(
            exc.exceptions,
            key=lambda e: 0 if isinstance(e, ForbiddenExtraKeysError | KeyError) else 1,
        )
        for sub in ordered:
            return _translate(sub, _child_path(path, sub, cl), cl)
    if isinstance(exc, IterableValidationError):
        for sub in exc.exceptions:
            return _translate(sub, _child_path(path, sub, owner), owner)
    if isinstance(exc, ForbiddenExtraKeysError):
        extra = sorted(exc.extra_fields)[0]
        return TaskError(
            ErrorCode.UNKNOWN_FIELD,
            f"unknown field {extra!r}; version {SCHEMA_VERSION} accepts only documented fields",
            path=_key_path(path, extra),
        )
    if isinstance(exc, TaskError):
        return exc.at(path)
    if isinstance(exc, KeyError):
        return TaskError(ErrorCode.MISSING_FIELD, "required field is missing; send it", path=path)
    return TaskError(ErrorCode.WRONG_TYPE, "value has the wrong JSON type", path=path)


# -- the codec --------------------------------------------------------------------------------


class Codec:
    """Strict decoding into wire types and plain encoding out of them.

    One instance owns one converter built by :func:`make_converter`. Instances are cheap to
    keep and safe to share between threads once built.
    """

    def __init__(self) -> None:
        self.converter = make_converter()

    def structure(self, value: Any, cls: type[T]) -> T:
        """Structure an already-parsed JSON tree into ``cls``, strictly."""
        try:
            return self.converter.structure(value, cls)
        except TaskError as err:
            raise err.at("$") from None
        except Exception as exc:
            raise _translate(exc, "$", None) from None

    def decode(
        self, cls: type[T], raw: bytes | str | Mapping[str, Any], *, max_bytes: int | None = None
    ) -> T:
        """Parse (if bytes or text) and structure ``raw`` into ``cls``.

        ``max_bytes`` bounds the raw document (default: the ordinary request bound).
        """
        if isinstance(raw, bytes | bytearray | memoryview | str):
            tree = parse_json(raw, max_bytes=max_bytes or REQUEST_BODY_MAX_BYTES)
        else:
            # Already a tree (MCP tool arguments, in-process calls): the same strict check
            # the bytes get, so no door skips it.
            tree = dict(raw)
            validate_tree(tree)
        return self.structure(tree, cls)

    def unstructure(self, obj: Any) -> Any:
        """Return the plain JSON tree of ``obj`` with wire names (enums as values)."""
        return self.converter.unstructure(obj)

    def dumps(self, obj: Any) -> bytes:
        """Return compact UTF-8 JSON of ``obj`` (not the canonical signing bytes)."""
        return dumps(self.unstructure(obj))


@cache
def default_codec() -> Codec:
    """Return a process-wide codec. Its converter is built once and never mutated."""
    return Codec()


def decode(
    cls: type[T], raw: bytes | str | Mapping[str, Any], *, max_bytes: int | None = None
) -> T:
    """Decode ``raw`` into ``cls`` with the default codec (see :meth:`Codec.decode`)."""
    return default_codec().decode(cls, raw, max_bytes=max_bytes)


def unstructure(obj: Any) -> Any:
    """Return the plain JSON tree of ``obj`` with the default codec."""
    return default_codec().unstructure(obj)
