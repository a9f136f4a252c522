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
import re
import types
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
from taskcore.jsontext import _SURROGATE, _key_path, dumps, parse_json, validate_tree
from taskcore.limits import REQUEST_BODY_MAX_BYTES
from taskcore.wirefield import (
    FIELD_RULES_KEY,
    SCHEMA_VERSION,
    FieldRules,
    field_rules,
    wire_field,
    wire_name,
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


def _int_ranged(tp: Any) -> bool:
    """Whether a field's ``lo``/``hi`` bound its integers.

    Only ``int`` fields (``None`` allowed) and ``tuple[int, ...]`` fields: the JSON Schema
    publishes ``minimum``/``maximum`` for exactly these. A free JSON field (``Any``) or a
    ``float`` field carries the default rules too, and applying their 0..2^64-1 range there
    refused a top-level ``-1`` the schema allows (a nested one was always accepted).
    """
    if get_origin(tp) in (typing.Union, types.UnionType):
        return any(_int_ranged(arg) for arg in get_args(tp) if arg is not type(None))
    return tp is int or _is_int_tuple(tp)


def _ranged_rules(rules: FieldRules, tp: Any) -> FieldRules:
    """``rules`` as they apply to a value of declared type ``tp`` (see :func:`_int_ranged`)."""
    if rules.version or _int_ranged(tp) or (rules.lo is None and rules.hi is None):
        return rules
    return attrs.evolve(rules, lo=None, hi=None)


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
            rules = _ranged_rules(field_rules(field), field.type)
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


# -- the fast path ----------------------------------------------------------------------------
#
# cattrs' generated functions plus a rule-checking wrapper per field cost several times the
# JSON parse. For a *valid* document the same result comes from one closure per type that
# checks and builds in one pass, with each field's rules folded into a specialised test. It
# accepts only what the converter accepts (exact JSON types, no unknown key, every required
# key, every rule); on anything else it gives up (any exception) and the converter runs as
# before, so every error, its code, message and path, is the converter's.
# tests/taskcore/test_codec.py checks that both paths agree on generated documents.

_Fast = Callable[[Any], Any]


class _GiveUpError(Exception):
    """The fast path does not accept the value; the converter decides."""


def _give_up(_: Any) -> Any:
    raise _GiveUpError


def _fast_rules(rules: FieldRules, tp: Any) -> Callable[[Any], bool] | None:
    """A test equivalent to ``_check_rules`` (and ``_check_int_items``) passing, or ``None``.

    ``tp`` (the declared type, ``None`` stripped) only narrows which JSON types can reach the
    structure hook afterwards; a value of another type is refused by that hook anyway.
    """
    if rules.version:
        return lambda v: type(v) is int and v == SCHEMA_VERSION
    lo, hi, least, most = rules.lo, rules.hi, rules.min_len, rules.max_len
    full = _compiled(rules.pattern).fullmatch if rules.pattern is not None else None
    has_items = (
        rules.item_max_len is not None
        or rules.item_min_len is not None
        or rules.item_pattern is not None
    )
    item_ok = _fast_rules(_item_rules(rules), str) if has_items else None
    int_items = _is_int_tuple(tp)

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
def _char_run(pattern: str) -> tuple[str, int, int] | None:
    """``(characters, least, most)`` when ``pattern`` is one character class repeated.

    Then ``fullmatch`` succeeds exactly when the length is in range and stripping those
    characters leaves nothing.

    >>> _char_run("[0-9a-f]{64}")
    ('0123456789abcdef', 64, 64)
    >>> _char_run("[A-Za-z0-9._-]{1,128}")[1:]
    (1, 128)
    >>> _char_run("[a-z]+") is None
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


class _FastStructure:
    """One fast structure function per type, built on first use (see above)."""

    def __init__(self, converter: cattrs.Converter, *, checked_tree: bool) -> None:
        self.converter = converter
        self.checked_tree = checked_tree
        self.hooks: dict[Any, _Fast] = {}

    def hook(self, tp: Any) -> _Fast:
        found = self.hooks.get(tp)
        if found is not None:
            return found
        # A class may contain itself (directly or not): refer to the finished hook late.
        late: list[_Fast] = []
        self.hooks[tp] = lambda v: late[0](v)
        try:
            built = self._build(tp)
        except Exception:  # a type the fast path cannot describe: always use the converter
            built = self._delegate(tp)
        late.append(built)
        self.hooks[tp] = built
        return built

    def _delegate(self, tp: Any) -> _Fast:
        slow = self.converter.get_structure_hook(tp)
        return lambda v: slow(v, tp)

    def _build(self, tp: Any) -> _Fast:
        if tp is str:
            if self.checked_tree:  # validate_tree already refused every lone surrogate
                return lambda v: v if type(v) is str else _give_up(v)
            search = _SURROGATE.search
            return lambda v: v if type(v) is str and search(v) is None else _give_up(v)
        if tp is int or tp is bool:
            return lambda v: v if type(v) is tp else _give_up(v)
        if tp is float:
            return lambda v: float(v) if type(v) is float or type(v) is int else _give_up(v)
        if tp is typing.Any:
            return lambda v: v
        if _is_enum(tp):
            members = {m.value: m for m in tp}
            value_type = type(next(iter(members)))
            return lambda v: members[v] if type(v) is value_type and v in members else _give_up(v)
        if _is_literal(tp):
            allowed = get_args(tp)

            def literal(v: Any) -> Any:
                for option in allowed:
                    if type(v) is type(option) and v == option:
                        return v
                raise _GiveUpError

            return literal
        args = get_args(tp)
        if (
            get_origin(tp) in (typing.Union, types.UnionType)
            and len(args) == 2
            and type(None) in args
        ):
            inner = self.hook(args[0] if args[1] is type(None) else args[1])
            return lambda v: None if v is None else inner(v)
        if _is_var_tuple(tp):
            item = self.hook(args[0])
            return lambda v: tuple([item(x) for x in v]) if type(v) is list else _give_up(v)
        if _is_dict(tp):
            return lambda v: dict(v) if type(v) is dict else _give_up(v)
        if attrs.has(tp):
            return self._class(tp)
        return self._delegate(tp)

    def _class(self, cl: type[Any]) -> _Fast:
        """Generate one function that checks and builds ``cl`` (straight-line code per field).

        Each field becomes a few lines: fetch the key (a missing required key raises
        ``KeyError``), one ``if`` that refuses a wrong type or a broken rule (inlined for
        ``str``, ``int``, ``bool`` and ``tuple[str, ...]`` fields), or else a call of the field
        type's own fast hook after its rule test.
        """
        attrs.resolve_types(cl)
        fields = attrs.fields(cl)
        if any(not f.init for f in fields) or not all(f.alias.isidentifier() for f in fields):
            return self._delegate(cl)
        env: dict[str, Any] = {"G": _GiveUpError, "cl": cl}
        lines = ["def build(v):", "    if type(v) is not dict or not keys.issuperset(v): raise G"]
        args: list[str] = []
        wires: list[str] = []
        for i, field in enumerate(fields):
            rules = field_rules(field)
            wire = rules.wire or field.name
            wires.append(wire)
            if field.default is attrs.NOTHING:
                lines.append(f"    x = v[{wire!r}]")
                lines.extend("    " + line for line in self._field(i, field.type, rules, env))
                args.append(f"{field.alias}=r{i}")
            else:
                if "**kw" not in args:
                    lines.insert(2, "    kw = {}")
                    args.append("**kw")
                lines.append(f"    if {wire!r} in v:")
                lines.append(f"        x = v[{wire!r}]")
                lines.extend("        " + line for line in self._field(i, field.type, rules, env))
                lines.append(f"        kw[{field.alias!r}] = r{i}")
        env["keys"] = frozenset(wires)
        lines.append(f"    return cl({', '.join(args)})")
        source = "\n".join(lines)
        exec(compile(source, f"<fast structure {cl.__qualname__}>", "exec"), env)  # noqa: S102 - generated from field declarations only
        return typing.cast(_Fast, env["build"])

    def _field(self, i: int, tp: Any, rules: FieldRules, env: dict[str, Any]) -> list[str]:
        """Lines that test ``x`` against one field's type and rules and leave it in ``r<i>``."""
        rules = _ranged_rules(rules, tp)
        args = get_args(tp)
        optional = get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args
        bare = tp
        if optional:
            rest = [a for a in args if a is not type(None)]
            bare = rest[0] if len(rest) == 1 else tp
        inline = self._inline(i, bare, rules, env)
        if inline is None:  # the rule test, then the type's own hook (None included)
            check = _fast_rules(rules, bare)
            env[f"h{i}"] = self.hook(tp) if tp is not None else (lambda v: v)
            lines = []
            if check is not None:
                env[f"c{i}"] = check
                lines.append(f"if x is not None and not c{i}(x): raise G")
            return [*lines, f"r{i} = h{i}(x)"]
        if not optional:
            return [line.replace("@", f"r{i}") for line in inline]
        return [
            "if x is None:",
            f"    r{i} = None",
            "else:",
            *("    " + line.replace("@", f"r{i}") for line in inline),
        ]

    def _inline(
        self, i: int, bare: Any, rules: FieldRules, env: dict[str, Any]
    ) -> list[str] | None:
        """Lines for a non-null ``x`` of a simple field type (``@`` is the target), or ``None``."""
        if rules.version:
            return None
        if _is_enum(bare):
            members = {m.value: m for m in bare}
            value_type = type(next(iter(members)))
            if value_type is not str or _fast_rules(rules, str) is not None:
                return None
            env[f"m{i}"] = members
            return [f"@ = m{i}.get(x) if type(x) is str else None", "if @ is None: raise G"]
        if bare is bool:
            return ["if type(x) is not bool: raise G", "@ = x"]
        if bare is int:
            refuse = ["type(x) is not int"]
            if rules.lo is not None:
                refuse.append(f"x < {rules.lo!r}")
            if rules.hi is not None:
                refuse.append(f"x > {rules.hi!r}")
            return [f"if {' or '.join(refuse)}: raise G", "@ = x"]
        if bare is str:
            refuse = ["type(x) is not str", *self._text_refusals("x", str(i), rules, env)]
            return [f"if {' or '.join(refuse)}: raise G", "@ = x"]
        if bare == tuple[str, ...]:
            refuse = ["type(x) is not list"]
            if rules.max_len is not None:
                refuse.append(f"len(x) > {rules.max_len!r}")
            if rules.min_len is not None:
                refuse.append(f"len(x) < {rules.min_len!r}")
            item = [
                "type(y) is not str",
                *self._text_refusals("y", f"{i}i", _item_rules(rules), env),
            ]
            return [
                f"if {' or '.join(refuse)}: raise G",
                "for y in x:",
                f"    if {' or '.join(item)}: raise G",
                "@ = tuple(x)",
            ]
        return None

    def _text_refusals(
        self, name: str, key: str, rules: FieldRules, env: dict[str, Any]
    ) -> list[str]:
        """Conditions under which the string ``name`` breaks ``rules`` (or holds a surrogate)."""
        refuse = []
        if not self.checked_tree:
            env["search"] = _SURROGATE.search
            refuse.append(f"search({name}) is not None")
        simple = _char_run(rules.pattern) if rules.pattern is not None else None
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
            env[f"p{key}"] = _compiled(rules.pattern).fullmatch
            refuse.append(f"p{key}({name}) is None")
        return refuse


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
        self._fast = _FastStructure(self.converter, checked_tree=False) if fast else None
        self._fast_checked = _FastStructure(self.converter, checked_tree=True) if fast else None

    def structure(self, value: Any, cls: type[T]) -> T:
        """Structure an already-parsed JSON tree into ``cls``, strictly."""
        return self._structure(value, cls, self._fast)

    def _structure(self, value: Any, cls: type[T], fast: _FastStructure | None) -> T:
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
