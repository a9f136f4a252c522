"""``taskcore.wirebuild``: the generated constructor builds what the class builds, refuses alike.

Every kind of wire field (``tests/taskcore/test_wirevalidate.py``'s ``Every``), free JSON
without rules (the queue's ``payload`` and ``checkpoint``), and the queue's views.
"""

from __future__ import annotations

import enum
import typing

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from taskcore.codec import field_rules, wire_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.queue.types import ClaimResult, LeaseHandle, LeaseView, TaskStatus, TaskView
from taskcore.wirebuild import constructor, evolved
from taskcore.wirerules import FieldRules, ranged_rules
from taskcore.wirevalidate import field_error, value_test

from tests.taskcore.test_wirevalidate import EVERY, Every, _instances
from tests.taskcore.wirevalues import json_values, of_type, outcome, same, wrong_json_type


class Shade(enum.Enum):
    DARK = "dark"


@attrs.frozen(kw_only=True)
class Free:
    data: typing.Any = wire_field()
    more: typing.Any = wire_field(default=None)
    items: tuple[str, ...] = wire_field(factory=tuple)


def _fields(value: object) -> dict[str, object]:
    return {f.alias: getattr(value, f.name) for f in attrs.fields(type(value))}


def test_the_classes_it_is_used_for_get_a_generated_constructor():
    for cls in (Every, Free, TaskView, ClaimResult, LeaseHandle, LeaseView):
        assert constructor(cls).__code__.co_filename.startswith("<wire constructor"), cls


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_it_builds_and_refuses_as_the_class_does_for_every_kind_of_field(data):
    attrs.resolve_types(Every)
    field = data.draw(st.sampled_from(attrs.fields(Every)), label="field")
    rules = ranged_rules(field_rules(field), field.type)
    new = data.draw(
        of_type(field.type, rules, _instances) | wrong_json_type(field.type), label="value"
    )
    kwargs = {**_fields(EVERY), field.alias: new}
    built = outcome(lambda: constructor(Every)(**kwargs))
    assert same(built, outcome(lambda: Every(**kwargs))), built


@settings(max_examples=300, deadline=None)
@given(value=json_values | st.tuples(st.sampled_from(list(Shade))) | st.just({"k": Shade.DARK}))
def test_free_json_without_rules_is_checked_as_the_class_checks_it(value):
    built = outcome(lambda: constructor(Free)(data=value))
    assert same(built, outcome(lambda: Free(data=value))), built
    rules = FieldRules(lo=None, hi=None)
    verdict = field_error(value, typing.Any, rules) is None
    assert value_test(typing.Any, rules)(value) == verdict


def test_a_refusal_is_the_validator_s_own():
    with pytest.raises(TaskError) as info:
        constructor(Free)(data=[1, float("nan")])
    assert (info.value.code, info.value.path) == (ErrorCode.BAD_INPUT, "$.data[1]")
    with pytest.raises(TaskError) as info:
        constructor(LeaseView)(
            owner="t", expires_at_ms=-1, heartbeat_at_ms=0, extensions=0, first_leased_at_ms=0
        )
    assert (info.value.code, info.value.path) == (ErrorCode.OUT_OF_BOUNDS, "$.expiresAtMs")


def test_defaults_and_factories_are_the_class_s():
    assert constructor(Free)(data=1) == Free(data=1)
    assert constructor(Free)(data=1).items == ()
    view = dict(
        task_id="at_1",
        verb="agent.run",
        status=TaskStatus.QUEUED,
        priority=-3,
        depth=0,
        autonomy_ceiling=1,
        parent_task_id=None,
        run_id=None,
        matter_id=None,
        matter_step_id=None,
        payload={"n": [1, "é"]},
        checkpoint=None,
        last_error=None,
        created_by="t",
        created_at_ms=1,
        updated_at_ms=2,
        finished_at_ms=None,
        fence=0,
        lease=None,
        escalation_gate_id=None,
    )
    assert constructor(TaskView)(**view) == TaskView(**view)


def test_a_class_it_cannot_describe_is_built_by_itself():
    @attrs.frozen(kw_only=True)
    class Converted:
        n: int = attrs.field(converter=int)

    @attrs.frozen
    class Positional:
        name: str = wire_field()

    @attrs.frozen(kw_only=True)
    class Checked:
        n: int = attrs.field(validator=attrs.validators.instance_of(int))

    for cls in (Converted, Positional, Checked):
        assert constructor(cls) is cls


@attrs.frozen(kw_only=True)
class Row:
    key: str
    n: int = 0
    note: str | None = None


@settings(max_examples=100, deadline=None)
@given(n=st.integers(), note=st.none() | st.text(max_size=4))
def test_evolved_is_attrs_evolve_for_a_record_without_validators(n, note):
    row = Row(key="k", n=1)
    assert evolved(row, n=n, note=note) == attrs.evolve(row, n=n, note=note)
    assert evolved(row) == row


def test_evolved_leaves_other_classes_and_unknown_fields_to_attrs():
    with pytest.raises(TypeError):
        evolved(Row(key="k"), nope=1)
    with pytest.raises(TaskError) as info:  # a wire class: its validators run
        evolved(constructor(Free)(data=1), data=float("inf"))
    assert info.value.code is ErrorCode.BAD_INPUT
