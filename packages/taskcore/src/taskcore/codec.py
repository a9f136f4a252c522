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
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar, get_args

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
from taskcore.fastdecode import FastStructure
from taskcore.jsontext import _SURROGATE, _key_path, dumps, parse_json, validate_tree
from taskcore.limits import REQUEST_BODY_MAX_BYTES
from taskcore.wirefield import FIELD_RULES_KEY, field_rules, wire_field, wire_name
from taskcore.wirerules import (
    SCHEMA_VERSION,
    FieldRules,
    check_int_items,
    check_rules,
    is_dict,
    is_enum,
    is_int_tuple,
    is_literal,
    is_var_tuple,
    ranged_rules,
    wrong_type,
)

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

# -- strict scalar hooks ----------------------------------------------------------------------


def _struct_str(value: Any, _: Any) -> str:
    if type(value) is not str:
        raise wrong_type(value, "a string")
    if _SURROGATE.search(value):
        raise TaskError(ErrorCode.INVALID_VALUE, "string contains a lone surrogate")
    return value


def _struct_int(value: Any, _: Any) -> int:
    if type(value) is not int:
        raise wrong_type(value, "an integer")
    return value


def _struct_bool(value: Any, _: Any) -> bool:
    if type(value) is not bool:
        raise wrong_type(value, "a boolean")
    return value


def _struct_float(value: Any, _: Any) -> float:
    if type(value) is bool or not isinstance(value, int | float):
        raise wrong_type(value, "a number")
    return float(value)


def _struct_any(value: Any, _: Any) -> Any:
    return value


def _enum_hook(tp: type[enum.Enum]) -> Callable[[Any, Any], enum.Enum]:
    allowed = [m.value for m in tp]

    def hook(value: Any, _: Any) -> enum.Enum:
        if type(value) is not type(allowed[0]):
            raise wrong_type(value, "a string")
        try:
            return tp(value)
        except ValueError:
            shown = ", ".join(str(a) for a in allowed)
            raise TaskError(ErrorCode.INVALID_VALUE, f"{value!r} is not one of: {shown}") from None

    return hook


def _literal_hook(tp: Any) -> Callable[[Any, Any], Any]:
    allowed = get_args(tp)

    def hook(value: Any, _: Any) -> Any:
        for option in allowed:
            if type(value) is type(option) and value == option:
                return value
        if not any(type(value) is type(option) for option in allowed):
            raise wrong_type(value, "a string" if isinstance(allowed[0], str) else "a literal")
        shown = ", ".join(repr(a) for a in allowed)
        raise TaskError(ErrorCode.INVALID_VALUE, f"{value!r} is not one of: {shown}")

    return hook


def make_converter() -> cattrs.Converter:
    """Build the strict converter. Call once per :class:`Codec`; never share a global one."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _struct_str)
    conv.register_structure_hook(int, _struct_int)
    conv.register_structure_hook(bool, _struct_bool)
    conv.register_structure_hook(float, _struct_float)
    conv.register_structure_hook(typing.Any, _struct_any)
    conv.register_structure_hook_factory(is_enum, _enum_hook)
    conv.register_structure_hook_factory(is_literal, _literal_hook)

    def tuple_factory(tp: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
        item_type = get_args(tp)[0]
        item_hook = conv.get_structure_hook(item_type)

        def hook(value: Any, _: Any) -> tuple[Any, ...]:
            if type(value) is not list:
                raise wrong_type(value, "an array")
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

    conv.register_structure_hook_factory(is_var_tuple, tuple_factory)

    def dict_factory(tp: Any) -> Callable[[Any, Any], dict[str, Any]]:
        def hook(value: Any, _: Any) -> dict[str, Any]:
            if type(value) is not dict:
                raise wrong_type(value, "an object")
            return dict(value)

        return hook

    conv.register_structure_hook_factory(is_dict, dict_factory)

    def class_factory(cl: type[Any]) -> Callable[[Any, Any], Any]:
        attrs.resolve_types(cl)
        overrides: dict[str, Any] = {}
        for field in attrs.fields(cl):
            rules = ranged_rules(field_rules(field), field.type)
            inner = conv.get_structure_hook(field.type) if field.type is not None else None

            def checked(
                value: Any,
                tp: Any,
                _rules: FieldRules = rules,
                _inner: Callable[[Any, Any], Any] | None = inner,
                _int_items: bool = is_int_tuple(field.type),
            ) -> Any:
                if value is not None:
                    check_rules(value, _rules)
                    if _int_items:
                        check_int_items(value, _rules)
                return _inner(value, tp) if _inner is not None else value

            overrides[field.name] = override(rename=rules.wire, struct_hook=checked)
        structure = make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, **overrides)

        def hook(value: Any, tp: Any) -> Any:
            if type(value) is not dict:
                raise wrong_type(value, "an object")
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
    conv.register_unstructure_hook_factory(is_enum, lambda _: lambda member: member.value)
    return conv


# -- error translation ------------------------------------------------------------------------


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
    keep and safe to share between threads once built. Decoding first tries generated
    functions that accept exactly what the converter accepts (see "the fast path" above); any
    value they do not accept goes to the converter, which reports the error. ``fast=False``
    keeps to the converter alone (the reference the tests hold the fast path to).
    """

    def __init__(self, *, fast: bool = True) -> None:
        self.converter = make_converter()
        self._fast = FastStructure(self.converter, checked_tree=False) if fast else None
        self._fast_checked = FastStructure(self.converter, checked_tree=True) if fast else None

    def structure(self, value: Any, cls: type[T]) -> T:
        """Structure an already-parsed JSON tree into ``cls``, strictly."""
        return self._structure(value, cls, self._fast)

    def _structure(self, value: Any, cls: type[T], fast: FastStructure | None) -> T:
        if fast is not None:
            try:
                return typing.cast(T, fast.hook(cls)(value))
            except Exception:  # noqa: S110 - the converter below decides and reports
                pass
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
        return self._structure(tree, cls, self._fast_checked)

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
