"""The construction validators of ``taskcore.wirevalidate`` against decoding, type by type.

``tests/taskcore/contract/test_construction.py`` holds every contract type to the same
verdict; here every kind of declared type a wire field may have is covered, including the
ones no contract type uses (free JSON, numbers, literals, nested tuples).
"""

from __future__ import annotations

import enum
import typing

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from taskcore.codec import decode, field_rules, wire_field, wire_name
from taskcore.errors import ErrorCode, TaskError
from taskcore.wirerules import FieldRules, ranged_rules
from taskcore.wirevalidate import field_error, value_test

from tests.taskcore.wirevalues import CODEC, of_type, outcome, same, to_json, wrong_json_type


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Leaf:
    name: str = wire_field(max_len=4, pattern=r"[a-z]{1,4}")
    weight: int = wire_field(lo=1, hi=9)


@attrs.frozen(kw_only=True)
class Every:
    version: int = wire_field(version=True)
    label: str = wire_field(min_len=2, max_len=6, wire="labelText")
    code: str = wire_field(max_len=64, pattern=r"[0-9a-f]{64}")
    free: str = wire_field(max_len=10)
    count: int = wire_field(lo=2, hi=20)
    big: int = wire_field()
    ratio: float = wire_field()
    flag: bool = wire_field()
    colour: Colour = wire_field()
    mode: typing.Literal["a", "b"] = wire_field()
    leaf: Leaf = wire_field()
    maybe_leaf: Leaf | None = wire_field(default=None)
    maybe_count: int | None = wire_field(default=None, lo=1)
    names: tuple[str, ...] = wire_field(max_len=3, item_max_len=3, item_pattern=r"[a-z]{1,3}")
    numbers: tuple[int, ...] = wire_field(max_len=3, lo=1, hi=9)
    leaves: tuple[Leaf, ...] = wire_field(min_len=1, max_len=2)
    colours: tuple[Colour, ...] = wire_field(default=())
    extra: dict[str, typing.Any] = wire_field(factory=dict)
    anything: typing.Any = wire_field(default=None, max_len=3)


LEAF = Leaf(name="ab", weight=3)
EVERY = Every(
    version=1,
    label="hello",
    code="0" * 64,
    free="é\n",
    count=5,
    big=2**64 - 1,
    ratio=0.5,
    flag=True,
    colour=Colour.RED,
    mode="a",
    leaf=LEAF,
    names=("ab",),
    numbers=(1, 9),
    leaves=(LEAF,),
    extra={"k": [1, None]},
    anything=[1, 2],
)
leaves = st.builds(
    Leaf, name=st.from_regex(r"[a-z]{1,4}", fullmatch=True), weight=st.integers(1, 9)
)


def _instances(cls):
    assert cls is Leaf
    return leaves


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_construction_and_decoding_agree_for_every_kind_of_field(data):
    attrs.resolve_types(Every)
    field = data.draw(st.sampled_from(attrs.fields(Every)), label="field")
    rules = ranged_rules(field_rules(field), field.type)
    new = data.draw(
        of_type(field.type, rules, _instances) | wrong_json_type(field.type), label="value"
    )
    constructed = outcome(lambda: attrs.evolve(EVERY, **{field.alias: new}))
    tree = CODEC.unstructure(EVERY)
    tree[wire_name(field)] = to_json(new)
    decoded = outcome(lambda: decode(Every, tree))
    assert same(constructed, decoded), (constructed, decoded)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_generated_test_and_the_error_path_give_one_verdict(data):
    attrs.resolve_types(Every)
    field = data.draw(st.sampled_from(attrs.fields(Every)))
    rules = field_rules(field)
    new = data.draw(of_type(field.type, ranged_rules(rules, field.type), _instances))
    assert value_test(field.type, rules)(new) == (field_error(new, field.type, rules) is None)


def test_a_refusal_names_the_wire_name_of_the_field():
    with pytest.raises(TaskError) as info:
        attrs.evolve(EVERY, label="x")
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.labelText")


def test_an_item_refusal_names_the_item():
    with pytest.raises(TaskError) as info:
        attrs.evolve(EVERY, names=("ab", "ABC"))
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.names[1]")
    with pytest.raises(TaskError) as info:
        attrs.evolve(EVERY, numbers=(1, 10))
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.numbers[1]")
    with pytest.raises(TaskError) as info:
        attrs.evolve(EVERY, leaves=(LEAF, "leaf"))
    assert (info.value.code, info.value.path) == (ErrorCode.WRONG_TYPE, "$.leaves[1]")


def test_free_json_is_held_to_what_json_can_carry():
    with pytest.raises(TaskError) as info:
        attrs.evolve(EVERY, extra={"k": [1, float("inf")]})
    assert (info.value.code, info.value.path) == (ErrorCode.BAD_INPUT, "$.extra.k[1]")
    with pytest.raises(TaskError) as info:
        attrs.evolve(EVERY, extra={"k": {1, 2}})
    assert (info.value.code, info.value.path) == (ErrorCode.BAD_INPUT, "$.extra.k")
    with pytest.raises(TaskError) as info:
        attrs.evolve(EVERY, anything=[1, 2, 3, 4])
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.anything")


def test_a_class_declared_where_its_annotations_cannot_be_resolved_still_checks_its_rules():
    class Local:  # a name the annotation below uses, unknown to this module's globals
        pass

    @attrs.frozen
    class Holder:
        name: str = wire_field(max_len=2)
        other: Local | None = wire_field(default=None)

    assert Holder(name="ab").name == "ab"
    with pytest.raises(TaskError) as info:
        Holder(name="abc")
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.name")


def test_a_field_test_is_one_generated_expression_for_the_common_types():
    for tp, rules in [
        (str, FieldRules(max_len=3)),
        (int, FieldRules()),
        (Leaf, FieldRules()),
        (tuple[Leaf, ...], FieldRules(max_len=2)),
        (Colour | None, FieldRules()),
    ]:
        test = value_test(tp, rules)
        assert test.__code__.co_filename == "<wire field test>", tp


def test_first_constructions_from_many_threads_are_all_checked():
    import threading

    @attrs.frozen
    class Fresh:  # a class no thread has built yet: every thread meets the first use
        name: str = wire_field(max_len=3)

    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def build(value: str) -> None:
        barrier.wait()
        try:
            Fresh(name=value)
            outcomes.append("built")
        except TaskError as err:
            outcomes.append(err.code.value)

    threads = [threading.Thread(target=build, args=("x" * (2 + i % 2 * 2),)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["OUT_OF_BOUNDS"] * 4 + ["built"] * 4
