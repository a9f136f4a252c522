"""Construction checks: the attrs validator every :func:`~taskcore.wirefield.wire_field` carries.

A wire value that decoding refuses cannot be constructed either. The validator reads the
field's :class:`~taskcore.wirerules.FieldRules` (the one rule table, which decoding reads
too) and checks the value a program passes the way decoding checks the JSON value it
came from: the tree check first (lone surrogates, non-finite numbers, values JSON cannot
carry), then the rules (lengths, patterns, ranges, the schema version), then the type.
The refusal is the same :class:`~taskcore.errors.TaskError` decoding raises, code and
path (``$.<wire name>``), so a caller fixes a construction the way it fixes a request.

Each field's check is generated once per class on first use (the declared type resolved
then) and is one expression for the common types; only a refused value walks the slower
path that names the error. Decoding does not run these validators: its fast path builds
values without ``__init__`` (:mod:`taskcore.fastdecode`), having checked every rule itself.

attrs only (no cattrs), like :mod:`taskcore.wirefield`.

>>> import attrs
>>> from taskcore.wirefield import wire_field
>>> @attrs.frozen
... class Row:
...     name: str = wire_field(max_len=4, pattern=r"[a-z]{1,4}")
>>> Row(name="abcde")
Traceback (most recent call last):
taskcore.errors.TaskError: 5 characters; at most 4 are allowed at $.name
>>> Row(name=7)
Traceback (most recent call last):
taskcore.errors.TaskError: expected a string, got integer; send a string at $.name
"""

from __future__ import annotations

import enum
import math
import types
import typing
import weakref
from collections.abc import Callable
from typing import Any, get_args, get_origin

import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.jsontext import _clean, _key_path, validate_tree
from taskcore.limits import JSON_MAX_DEPTH
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
    item_rules,
    json_type,
    ranged_rules,
    text_refusals,
    wrong_type,
)

__all__ = ["field_accepts", "field_error", "field_validator", "is_wire_validator", "value_test"]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]
"""An attrs validator: ``(instance, attribute, value)``, raises or returns nothing."""

_NONE = type(None)
# A field's value sits at least one level below the document it travels in.
_FIELD_DEPTH = JSON_MAX_DEPTH - 1
_VALIDATORS: weakref.WeakSet[Validator] = weakref.WeakSet()


def field_validator(rules: FieldRules) -> Validator:
    """The attrs validator of one wire field with ``rules``.

    Its test is built on the first construction (the declared type is resolved then, when
    the module that declares it is complete) and kept for that class; a subclass that
    inherits the field builds its own each time (none of taskcore's wire types has one).
    """
    owner: type[Any] | None = None  # the class whose test is kept (nearly always the only one)
    owner_test: Callable[[Any], bool] = bool
    owner_type: Any = typing.Any

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        nonlocal owner, owner_test, owner_type
        cls = instance.__class__
        if cls is owner:
            if owner_test(value):
                return
            test, tp = owner_test, owner_type
        else:
            test, tp = _field_test(cls, attribute, rules)
            if owner is None and (tp is not typing.Any or attribute.type in (typing.Any, "Any")):
                # Kept (an unresolved type is tried again); the owner last, so a thread that
                # sees it also sees its test.
                owner_test, owner_type = test, tp
                owner = cls
            if test(value):
                return
        error = field_error(value, tp, rules)
        if error is None:  # pragma: no cover - the test and the error path disagree
            error = TaskError(ErrorCode.INVALID_VALUE, "value breaks the field's rules")
        raise error.at(_key_path("$", rules.wire or attribute.name)) from None

    _VALIDATORS.add(validate)
    return validate


def is_wire_validator(validator: object) -> bool:
    """Whether ``validator`` is one :func:`field_validator` made (a ``wire_field``'s)."""
    try:
        return validator in _VALIDATORS
    except TypeError:  # not weakly referenceable: not one of ours
        return False


def _field_test(
    cls: type[Any], attribute: attrs.Attribute[Any], rules: FieldRules
) -> tuple[Callable[[Any], bool], Any]:
    """The test of ``attribute`` on ``cls`` and its declared type (``Any`` if unresolvable).

    A class whose annotations name something its module cannot resolve (yet: a value built
    while its module is still being imported; or ever: a class declared inside a function)
    is checked against its rules alone, as a free JSON value.
    """
    try:
        attrs.resolve_types(cls)
        tp = getattr(attrs.fields(cls), attribute.name).type
    except Exception:
        tp = typing.Any
    if tp is None or isinstance(tp, str):
        tp = typing.Any
    return value_test(tp, rules), tp


# -- the error path ---------------------------------------------------------------------------


def field_error(value: Any, tp: Any, rules: FieldRules) -> TaskError | None:
    """The refusal decoding gives the JSON form of ``value`` as a field of type ``tp``.

    ``None`` when it is acceptable. The path is relative to the field (``$``, ``$[2]``).
    Checked in decoding's order: the tree check, the rules, then the type.
    """
    view = _json_view(value)
    try:
        validate_tree(view, max_depth=_FIELD_DEPTH)
        if value is not None:
            rules = ranged_rules(rules, tp)
            check_rules(view, rules)
            if is_int_tuple(tp):
                check_int_items(view, rules)
    except TaskError as err:
        return err
    return _type_error(value, tp)


def _json_view(value: Any) -> Any:
    """``value`` as the JSON it is encoded as, enough for the tree check and the rules."""
    kind = type(value)
    if kind is tuple or kind is list:
        return [_json_view(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    if attrs.has(kind):
        return {}  # a constructed value: checked when it was built
    return value


def _type_error(value: Any, tp: Any) -> TaskError | None:
    """Whether ``value`` is what decoding produces for ``tp``: the error if not."""
    if tp is typing.Any:
        return None
    args = get_args(tp)
    if get_origin(tp) in (typing.Union, types.UnionType):
        if value is None and _NONE in args:
            return None
        errors = [_type_error(value, arg) for arg in args if arg is not _NONE]
        return None if any(error is None for error in errors) else errors[0]
    kind = type(value)
    if tp is str:
        return None if kind is str else wrong_type(value, "a string")
    if tp is bool:
        return None if kind is bool else wrong_type(value, "a boolean")
    if tp is int:
        return None if kind is int else wrong_type(value, "an integer")
    if tp is float:
        return None if kind is float or kind is int else wrong_type(value, "a number")
    if is_enum(tp):
        if kind is tp:
            return None
        return TaskError(
            ErrorCode.WRONG_TYPE,
            f"expected a member of {tp.__name__}, got {json_type(value)}; pass "
            f"{tp.__name__}.{next(iter(tp)).name} or another member",
        )
    if is_literal(tp):
        for option in args:
            if kind is type(option) and value == option:
                return None
        if not any(kind is type(option) for option in args):
            return wrong_type(value, "a string" if isinstance(args[0], str) else "a literal")
        shown = ", ".join(repr(a) for a in args)
        return TaskError(ErrorCode.INVALID_VALUE, f"{value!r} is not one of: {shown}")
    if is_var_tuple(tp):
        if kind is not tuple:
            return TaskError(
                ErrorCode.WRONG_TYPE,
                f"expected a tuple (a JSON array), got {json_type(value)}; pass a tuple",
            )
        for index, item in enumerate(value):
            error = _type_error(item, args[0])
            if error is not None:
                return error.at(f"$[{index}]")
        return None
    if is_dict(tp):
        return None if kind is dict else wrong_type(value, "an object")
    if attrs.has(tp):
        if isinstance(value, tp):
            return None
        return TaskError(
            ErrorCode.WRONG_TYPE,
            f"expected a {tp.__name__}, got {json_type(value)}; pass a {tp.__name__}",
        )
    return None  # a type decoding does not describe either: nothing to hold it to


# -- the test: one generated expression per field ---------------------------------------------


def value_test(tp: Any, rules: FieldRules) -> Callable[[Any], bool]:
    """A predicate that holds exactly when :func:`field_error` finds nothing.

    One generated expression for the types wire fields use (strings, integers, booleans,
    numbers, enums, string literals, wire classes, tuples and ``None`` of those, free
    objects); any other declared type is tested through :func:`field_error` itself.

    >>> test = value_test(int, FieldRules(lo=1))
    >>> test(1), test(0), test(True)
    (True, False, False)
    """
    rules = ranged_rules(rules, tp)
    env: dict[str, Any] = {}
    source = _tuple_loop(tp, rules, env)  # a loop beats all() over a generator for few items
    if source is None:
        condition = _accepts("v", tp, rules, env, "0")
        if condition is None:
            return lambda v: field_error(v, tp, rules) is None
        source = f"def test(v):\n    return {condition}"
    exec(compile(source, "<wire field test>", "exec"), env)  # noqa: S102 - generated from field declarations only
    return typing.cast(Callable[[Any], bool], env["test"])


def field_accepts(name: str, tp: Any, rules: FieldRules, env: dict[str, Any], key: str) -> str:
    """A Python expression true exactly when the value ``name`` passes the field's check.

    For generated code that checks several fields at once (:mod:`taskcore.wirebuild`):
    the inline expression of :func:`value_test` where there is one, else a call of the
    field's test (put into ``env`` under ``key``). ``rules`` as :func:`ranged_rules` gives
    them for ``tp``.
    """
    condition = (
        None if _tuple_loop(tp, rules, {}) is not None else _accepts(name, tp, rules, env, key)
    )
    if condition is not None:
        return condition
    env[f"T{key}"] = value_test(tp, rules)
    return f"T{key}({name})"


def _tuple_loop(tp: Any, rules: FieldRules, env: dict[str, Any]) -> str | None:
    """The test of a ``tuple[X, ...]`` field (or ``None`` of one) as a loop, or ``None``."""
    args = get_args(tp)
    nullable = get_origin(tp) in (typing.Union, types.UnionType) and _NONE in args
    if nullable:
        rest = [arg for arg in args if arg is not _NONE]
        if len(rest) != 1:
            return None
        tp, args = rest[0], get_args(rest[0])
    if not is_var_tuple(tp) or rules.version:
        return None
    parts = _tuple_parts("v", args[0], rules, env, "0")
    if parts is None:
        return None
    head, item, each = parts
    lines = ["def test(v):"]
    if nullable:
        lines.append("    if v is None: return True")
    lines += [
        f"    if not {head}: return False",
        f"    for {item} in v:",
        f"        if not {each}: return False",
        "    return True",
    ]
    return "\n".join(lines)


def _accepts(name: str, tp: Any, rules: FieldRules, env: dict[str, Any], key: str) -> str | None:
    """A Python expression true when the value ``name`` passes, or ``None`` (use the slow path)."""
    if rules.version:
        return f"(type({name}) is int and {name} == {SCHEMA_VERSION})"
    args = get_args(tp)
    if get_origin(tp) in (typing.Union, types.UnionType):
        rest = [arg for arg in args if arg is not _NONE]
        if len(rest) != 1 or len(rest) == len(args):
            return None
        inner = _accepts(name, rest[0], rules, env, key)
        return None if inner is None else f"({name} is None or {inner})"
    has_text_rules = rules.max_len is not None or rules.min_len is not None
    has_text_rules = has_text_rules or rules.pattern is not None
    if tp is str:
        refuse = text_refusals(name, key, rules, env, surrogates=True)
        return f"(type({name}) is str{''.join(f' and not {r}' for r in refuse)})"
    if tp is int:
        accept = [f"type({name}) is int"]
        if rules.lo is not None:
            accept.append(f"{name} >= {rules.lo!r}")
        if rules.hi is not None:
            accept.append(f"{name} <= {rules.hi!r}")
        return f"({' and '.join(accept)})"
    if is_var_tuple(tp):
        return _tuple_accepts(name, args[0], rules, env, key)
    if has_text_rules:
        return None  # length or pattern rules on another type: rare, the slow path decides
    if tp is typing.Any and rules.lo is None and rules.hi is None and not _has_item_rules(rules):
        # Free JSON: no rule applies, so the verdict is the tree check of the value's JSON
        # form. A value that is plain JSON already passes as it is; anything else (a tuple
        # holding an enum member, a wire value) takes the path that converts it first.
        env["clean"] = _clean
        env[f"A{key}"] = lambda v: field_error(v, tp, rules) is None
        return f"(clean({name}, {_FIELD_DEPTH}) or A{key}({name}))"
    if tp is bool:
        return f"(type({name}) is bool)"
    if tp is float:
        env["isfinite"] = math.isfinite
        return f"(type({name}) is int or (type({name}) is float and isfinite({name})))"
    if is_enum(tp):
        env[f"E{key}"] = tp
        return f"(type({name}) is E{key})"
    if is_literal(tp) and all(type(arg) is str for arg in args):
        env[f"L{key}"] = frozenset(args)
        return f"(type({name}) is str and {name} in L{key})"
    if attrs.has(tp):
        env[f"C{key}"] = tp
        return f"isinstance({name}, C{key})"
    if is_dict(tp):
        env["tree_error"] = _tree_error
        return f"(type({name}) is dict and not tree_error({name}))"
    return None


def _has_item_rules(rules: FieldRules) -> bool:
    return (
        rules.item_max_len is not None
        or rules.item_min_len is not None
        or rules.item_pattern is not None
    )


def _tuple_accepts(
    name: str, item_type: Any, rules: FieldRules, env: dict[str, Any], key: str
) -> str | None:
    parts = _tuple_parts(name, item_type, rules, env, key)
    if parts is None:
        return None
    head, item, each = parts
    return f"({head} and all({each} for {item} in {name}))"


def _tuple_parts(
    name: str, item_type: Any, rules: FieldRules, env: dict[str, Any], key: str
) -> tuple[str, str, str] | None:
    """The tuple's own condition, the item's name and the item's condition (or ``None``)."""
    accept = [f"type({name}) is tuple"]
    if rules.max_len is not None:
        accept.append(f"len({name}) <= {rules.max_len!r}")
    if rules.min_len is not None:
        accept.append(f"len({name}) >= {rules.min_len!r}")
    item = f"y{key}"
    if item_type is str:
        each = _accepts(item, str, item_rules(rules), env, f"{key}i")
    elif item_type is int:
        each = _accepts(item, int, FieldRules(lo=rules.lo, hi=rules.hi), env, f"{key}i")
    else:
        each = _accepts(item, item_type, FieldRules(lo=None, hi=None), env, f"{key}i")
    if each is None:
        return None
    return f"({' and '.join(accept)})", item, each


def _tree_error(value: Any) -> bool:
    """Whether a free JSON object holds what JSON cannot carry (the tree check refuses it)."""
    try:
        validate_tree(value, max_depth=_FIELD_DEPTH)
    except TaskError:
        return True
    return False
