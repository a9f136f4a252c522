import enum
import typing

import attrs
import pytest
import taskcore.contract as contract
from hypothesis import given, settings
from hypothesis import strategies as st
from taskcore.codec import Codec, field_rules
from taskcore.contract import (
    CAPABILITY,
    SCHEMA_MISMATCH_ACTION,
    SUPPORTED_SCHEMA_VERSIONS,
    ActionClass,
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    ExecutorBinding,
    GraphStatus,
    SchemaMismatch,
    TrustClass,
    WorkflowProgression,
    schema_mismatch,
)
from taskcore.errors import ErrorCode
from taskcore.limits import U64_MAX

from .strategies import ALL_TYPES, agents, executors, schema_mismatches
from .wire import check_round_trip, check_strictness, expect_error

CONTRACT_TYPES = sorted(
    (obj for name in contract.__all__ if attrs.has(obj := getattr(contract, name))),
    key=lambda cls: cls.__name__,
)


def test_capability_and_schema_version_are_the_seed_spellings():
    assert CAPABILITY == "agentscm.agent-workflow-tasks/v1"
    assert contract.SCHEMA_VERSION == 1
    assert SUPPORTED_SCHEMA_VERSIONS == (1,)


@pytest.mark.parametrize(
    ("enum_type", "spellings"),
    [
        (
            TrustClass,
            [
                "agent_assertion",
                "registered_executor_observation",
                "independent_controller_evidence",
            ],
        ),
        (CriterionMode, ["controller_only", "observation_eligible"]),
        (GraphStatus, ["required", "optional"]),
        (ActionClass, ["implement", "test", "build", "lint", "review"]),
        (WorkflowProgression, ["agent_result", "collector", "controller"]),
        (CriterionOutcome, ["passed", "failed", "uncertain", "not_claimed"]),
        (AssertionOutcome, ["passed", "failed", "uncertain"]),
    ],
)
def test_enum_wire_spellings_are_pinned_snake_case(enum_type, spellings):
    assert [m.value for m in enum_type] == spellings


def test_only_agent_and_registered_observation_classes_are_wire_selectable():
    assert [t.value for t in TrustClass if t.wire_selectable] == [
        "agent_assertion",
        "registered_executor_observation",
    ]


def test_authority_validated_collector_dependency_has_no_wire_spelling():
    assert all("collector" not in t.value for t in TrustClass)


def test_schema_mismatch_echoes_the_offer_and_lists_the_server_versions():
    answer = schema_mismatch((2, 3))
    assert answer == SchemaMismatch(
        status="schema_mismatch",
        capability=CAPABILITY,
        required_schema_version=1,
        supported_schema_versions=(2, 3),
        server_schema_versions=(1,),
        action=SCHEMA_MISMATCH_ACTION,
    )


def test_schema_mismatch_bounds_an_oversized_offer():
    answer = schema_mismatch(tuple(range(20)))
    assert len(answer.supported_schema_versions) == 8
    check_round_trip(answer)


def test_schema_mismatch_action_is_a_hint_not_a_command():
    assert "$" not in SCHEMA_MISMATCH_ACTION
    assert "`" not in SCHEMA_MISMATCH_ACTION


@pytest.mark.parametrize("good", ["a", "A-z_0.9", "x" * 128])
def test_identifiers_in_the_seed_alphabet_are_accepted(good):
    assert Codec().decode(AgentIdentity, {"owner_id": good, "agent_id": "g"}).owner_id == good


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ("", ErrorCode.INVALID_VALUE),
        ("has space", ErrorCode.INVALID_VALUE),
        ("slash/", ErrorCode.INVALID_VALUE),
        ("é", ErrorCode.INVALID_VALUE),
        ("x" * 129, ErrorCode.OUT_OF_BOUNDS),
    ],
)
def test_identifiers_outside_the_seed_alphabet_are_refused(bad, code):
    expect_error(AgentIdentity, {"owner_id": bad, "agent_id": "g"}, code, "$.owner_id")


def test_registration_epoch_starts_at_one():
    tree = {
        "registration_id": "r",
        "executor_id": "e",
        "registration_epoch": 0,
        "verification_key_id": "k",
    }
    expect_error(ExecutorBinding, tree, ErrorCode.OUT_OF_BOUNDS, "$.registration_epoch")


@given(st.one_of(agents, executors, schema_mismatches))
def test_common_types_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


# -- meta: properties every contract type has ------------------------------------------------


def test_every_contract_type_has_a_strategy():
    missing = [cls.__name__ for cls in CONTRACT_TYPES if cls not in ALL_TYPES]
    assert missing == []


@pytest.mark.parametrize("cls", CONTRACT_TYPES, ids=lambda cls: cls.__name__)
@settings(max_examples=3)  # each example builds a whole tree of every contract type
@given(data=st.data())
def test_every_contract_type_is_frozen_and_keyword_only(cls, data):
    for field in attrs.fields(cls):
        assert field.kw_only, field.name
    instance = data.draw(ALL_TYPES[cls])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(instance, attrs.fields(cls)[0].name, None)


def _leaf_types(tp):
    origin = typing.get_origin(tp)
    if origin in (typing.Union, __import__("types").UnionType):
        for arg in typing.get_args(tp):
            yield from _leaf_types(arg)
    elif origin is tuple:
        yield tuple
        yield from _leaf_types(typing.get_args(tp)[0])
    else:
        yield origin or tp


@pytest.mark.parametrize("cls", CONTRACT_TYPES, ids=lambda cls: cls.__name__)
def test_every_string_and_collection_field_is_bounded(cls):
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        rules = field_rules(field)
        leaves = set(_leaf_types(hints[field.name]))
        assert list not in leaves, f"{field.name}: collections are tuples"
        assert dict not in leaves, f"{field.name}: objects are attrs types"
        if tuple in leaves:
            assert rules.max_len is not None, f"{cls.__name__}.{field.name} is an unbounded array"
            item = typing.get_args(hints[field.name])[0]
            if item is str:
                assert rules.item_max_len is not None or rules.item_pattern is not None, (
                    f"{cls.__name__}.{field.name} has unbounded items"
                )
        elif str in leaves and typing.get_origin(hints[field.name]) is not typing.Literal:
            assert rules.max_len is not None, f"{cls.__name__}.{field.name} is an unbounded string"
        if int in leaves or tuple in leaves:
            assert rules.lo is not None
            assert rules.hi is not None
            assert rules.hi <= U64_MAX


@pytest.mark.parametrize("cls", CONTRACT_TYPES, ids=lambda cls: cls.__name__)
def test_enum_fields_use_snake_case_values(cls):
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        for leaf in _leaf_types(hints[field.name]):
            if isinstance(leaf, type) and issubclass(leaf, enum.Enum):
                for member in leaf:
                    assert member.value == member.name.lower(), member
