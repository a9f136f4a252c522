"""Python values of a wire field's declared type, and how construction and decoding answer.

Shared by the property tests that hold construction (the attrs validators of
``taskcore.wirevalidate``) and decoding (``taskcore.codec``) to the same verdict:
``tests/taskcore/contract/test_construction.py`` over the contract types and
``tests/taskcore/test_wirevalidate.py`` over the codec's own test types.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st
from taskcore.codec import Codec
from taskcore.errors import TaskError
from taskcore.limits import U64_MAX
from taskcore.schema_strategies import wire_values
from taskcore.wirerules import FieldRules, item_rules

CODEC = Codec()
NONE = type(None)
Instances = Callable[[type[Any]], st.SearchStrategy[Any]]
"""Valid instances of a wire class (nested values are drawn from it)."""

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**65), 2**65)
    | st.floats()
    | st.text(max_size=8)
    | st.just("\ud800")
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def strings(rules: FieldRules) -> st.SearchStrategy[str]:
    options: list[st.SearchStrategy[str]] = [
        st.text(max_size=12),
        st.sampled_from(["", "a", "0" * 63, "0" * 64, "0" * 65, "A" * 64, "a/b", "\x00", "\ud800"]),
    ]
    if rules.pattern is not None:
        options.append(st.from_regex(rules.pattern, fullmatch=True))
    for bound in (rules.max_len, rules.min_len):
        if bound is not None:
            options.append(
                st.sampled_from(["a" * max(bound - 1, 0), "a" * bound, "a" * (bound + 1)])
            )
    return st.one_of(options)


def integers(rules: FieldRules) -> st.SearchStrategy[int]:
    edges = {0, 1, 7, -1, U64_MAX, U64_MAX + 1}
    for bound in (rules.lo, rules.hi):
        if bound is not None:
            edges |= {bound - 1, bound, bound + 1}
    return st.sampled_from(sorted(edges)) | st.integers(-(2**65), 2**65)


def of_type(
    tp: Any, rules: FieldRules, instances: Instances = wire_values
) -> st.SearchStrategy[Any]:
    """Python values of declared type ``tp``: valid ones, near misses and far misses."""
    if rules.version:
        return st.sampled_from([0, 1, 2, 7]) | st.integers(-3, 2**65)
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return st.one_of(
            [st.none(), *(of_type(a, rules, instances) for a in args if a is not NONE)]
        )
    if tp is str:
        return strings(rules)
    if tp is int:
        return integers(rules)
    if tp is bool:
        return st.booleans()
    if tp is float:
        return st.floats() | st.integers(-5, 5)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if typing.get_origin(tp) is typing.Literal:
        return st.sampled_from(args) | st.text(max_size=6)
    if attrs.has(tp):
        return instances(tp)
    if typing.get_origin(tp) is tuple:
        item_type = args[0]
        each = item_rules(rules) if item_type is str else FieldRules(lo=rules.lo, hi=rules.hi)
        items = of_type(item_type, each if item_type in (str, int) else FieldRules(), instances)
        most = rules.max_len if rules.max_len is not None else 4
        short = st.lists(items, max_size=min(most + 1, 4)).map(tuple)
        overfull = items.map(lambda item: (item,) * (most + 1))
        return short | overfull | st.just(())
    if tp is dict or typing.get_origin(tp) is dict:
        return st.dictionaries(st.text(max_size=4), json_values, max_size=3)
    return json_values


def wrong_json_type(tp: Any) -> st.SearchStrategy[Any]:
    """Values of another JSON type than ``tp``'s (never one only Python tells apart)."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        tp = next(a for a in args if a is not NONE)
        nullable = True
    else:
        nullable = False
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        kinds = {"integer", "boolean", "null", "number"}
    elif tp is str or typing.get_origin(tp) is typing.Literal:
        kinds = {"integer", "boolean", "null", "object"}
    elif tp in (int, float):
        kinds = {"string", "boolean", "null"} | ({"number"} if tp is int else set())
    elif tp is bool:
        kinds = {"integer", "string", "null"}
    elif (
        attrs.has(tp)
        or typing.get_origin(tp) is tuple
        or tp is dict
        or typing.get_origin(tp) is dict
    ):
        kinds = {"string", "integer", "null"}
    else:
        return st.nothing()
    if nullable:
        kinds.discard("null")
    pick = {
        "integer": st.integers(0, 9),
        "boolean": st.booleans(),
        "null": st.none(),
        "number": st.just(1.5),
        "string": st.just("x"),
        "object": st.just({"a": 1}),
    }
    return st.one_of([pick[k] for k in sorted(kinds)])


def to_json(value: Any) -> Any:
    if attrs.has(type(value)):
        return CODEC.unstructure(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


def outcome(make: typing.Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("built", make())
    except TaskError as err:
        return ("refused", err.code, err.path)


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    if a[0] == "built" and b[0] == "built":
        return a[1] == b[1]
    return a == b
