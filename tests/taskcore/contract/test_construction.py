"""Construction and decoding agree over every v1 contract type.

A value is valid by one iff it is valid by the other: for any valid instance, replacing one
field with any value of that field's declared type (or of another JSON type) either
constructs and decodes to the same value, or is refused by both with the same code and
path. The construction side is the attrs validator every ``wire_field`` carries
(``taskcore.wirevalidate``); both read the field's one ``FieldRules``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from taskcore.codec import Codec, decode, field_rules, wire_name
from taskcore.contract import (
    AgentIdentity,
    TaskResultAssertion,
    WorkflowTaskSubject,
    sign_observation,
    verify_observation,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.schema_strategies import wire_values
from taskcore.signing import public_key_hex
from taskcore.wirerules import ranged_rules

from tests.taskcore.wirevalues import CODEC, of_type, outcome, same, to_json, wrong_json_type

from . import samples
from .strategies import ALL_TYPES

SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"


def _instances(cls: type[Any]) -> st.SearchStrategy[Any]:
    return ALL_TYPES[cls] if cls in ALL_TYPES else wire_values(cls)


@pytest.mark.parametrize("cls", list(ALL_TYPES), ids=lambda cls: cls.__name__)
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_construction_and_decoding_agree(cls, data):
    base = data.draw(_instances(cls), label="valid instance")
    attrs.resolve_types(cls)
    field = data.draw(st.sampled_from(attrs.fields(cls)), label="field")
    rules = ranged_rules(field_rules(field), field.type)
    new = data.draw(
        of_type(field.type, rules, _instances) | wrong_json_type(field.type), label="value"
    )

    constructed = outcome(lambda: attrs.evolve(base, **{field.alias: new}))
    tree = CODEC.unstructure(base)
    tree[wire_name(field)] = to_json(new)
    decoded = outcome(lambda: decode(cls, tree))
    assert same(constructed, decoded), (constructed, decoded)


def test_every_field_type_of_the_contract_has_a_generated_construction_test():
    """No field's declared type falls back to the slow path (the per-type expression)."""
    from taskcore.wirevalidate import _accepts

    slow = []
    for cls in ALL_TYPES:
        attrs.resolve_types(cls)
        for field in attrs.fields(cls):
            rules = ranged_rules(field_rules(field), field.type)
            if _accepts("v", field.type, rules, {}, "0") is None:
                slow.append(f"{cls.__name__}.{field.name}")
    assert slow == []


# -- the cases the issue names ----------------------------------------------------------------


def test_a_subject_with_a_revision_that_is_not_hex_cannot_be_constructed():
    subject = samples.subject()
    with pytest.raises(TaskError) as info:
        attrs.evolve(subject, revision="zz")
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.revision")
    kwargs = {f.alias: getattr(subject, f.name) for f in attrs.fields(WorkflowTaskSubject)}
    with pytest.raises(TaskError):
        WorkflowTaskSubject(**{**kwargs, "revision": "zz"})


def test_an_agent_identity_with_an_empty_owner_cannot_be_constructed():
    with pytest.raises(TaskError) as info:
        AgentIdentity(owner_id="", agent_id="agent-1")
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.owner_id")
    with pytest.raises(TaskError) as decoded:
        decode(AgentIdentity, {"owner_id": "", "agent_id": "agent-1"})
    assert (decoded.value.code, decoded.value.path) == (info.value.code, info.value.path)


@pytest.mark.parametrize(
    ("change", "code", "path"),
    [
        ({"version": 7}, ErrorCode.UNSUPPORTED_VERSION, "$.version"),
        ({"fence": 0}, ErrorCode.OUT_OF_BOUNDS, "$.fence"),
        ({"version": 7, "fence": 0}, ErrorCode.UNSUPPORTED_VERSION, "$.version"),
    ],
)
def test_an_assertion_with_a_wrong_version_or_fence_never_reaches_signing(change, code, path):
    unsigned = samples.assertion()
    with pytest.raises(TaskError) as info:
        attrs.evolve(unsigned, **change)
    assert (info.value.code, info.value.path) == (code, path)
    # What can be built is signed and verified; the refused one never exists to be signed.
    signed = sign_observation(unsigned, SEED)
    verify_observation(signed, public_key_hex(SEED))
    with pytest.raises(TaskError):
        attrs.evolve(signed, **change)


def test_a_tuple_field_wants_a_tuple_and_an_enum_field_a_member():
    row = samples.assertion().criteria[0]
    with pytest.raises(TaskError) as info:
        attrs.evolve(row, findings=["a list"])
    assert (info.value.code, info.value.path) == (ErrorCode.WRONG_TYPE, "$.findings")
    with pytest.raises(TaskError) as info:
        attrs.evolve(row, outcome="passed")
    assert (info.value.code, info.value.path) == (ErrorCode.WRONG_TYPE, "$.outcome")


def test_a_non_finite_number_is_refused_like_decoding_refuses_it():
    assert not math.isfinite(float("nan"))
    row = samples.assertion().criteria[0]
    with pytest.raises(TaskError) as info:
        attrs.evolve(row, findings=("ok", "\ud800"))
    assert (info.value.code, info.value.path) == (ErrorCode.BAD_INPUT, "$.findings[1]")


# -- decoding builds without the validators ----------------------------------------------------


def test_decoding_does_not_check_a_valid_document_twice(monkeypatch):
    """The fast path builds every contract value without ``__init__``: no validator runs."""
    signed = sign_observation(samples.assertion(), SEED)
    raw = CODEC.dumps(signed)
    calls: list[str] = []
    for cls in {TaskResultAssertion, *(type(v) for v in _nested(signed))}:
        original = cls.__init__

        def counting(self, *args, _cls=cls, _init=original, **kwargs):
            calls.append(_cls.__name__)
            _init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    assert Codec().decode(TaskResultAssertion, raw) == signed
    assert calls == []
    # The converter (the reference, and the error path) builds through __init__.
    assert Codec(fast=False).decode(TaskResultAssertion, raw) == signed
    assert "TaskResultAssertion" in calls


def _nested(value: Any) -> list[Any]:
    found = []
    for field in attrs.fields(type(value)):
        inner = getattr(value, field.name)
        items = inner if isinstance(inner, tuple) else (inner,)
        for item in items:
            if attrs.has(type(item)):
                found.append(item)
                found.extend(_nested(item))
    return found
