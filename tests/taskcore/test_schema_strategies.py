"""Strategies from the published JSON Schemas, and the decoder held to those schemas.

Every registry operation's input type and every contract type: each document drawn from the
type's schema is valid by an independent validator (``jsonschema``, draft 2020-12), and the
strict decoder accepts it unless one of the rules listed in ``DECODER_ONLY`` (checks the schema
cannot or does not spell: cross-field rules, canonical paths, a fixed capability) refuses it.
A refusal outside that list is a disagreement between the schema a client reads and the
decoder the server runs, and fails here.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import jsonschema
import pytest
import taskcore.contract as contract
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from taskcore.codec import decode
from taskcore.errors import ErrorCode, TaskError
from taskcore.registry import default_registry
from taskcore.schema import json_schema
from taskcore.schema_strategies import UnsupportedSchemaError, from_schema, wire_values

CONTRACT_TYPES = [obj for name in contract.__all__ if attrs.has(obj := getattr(contract, name))]
OPERATION_TYPES = sorted(
    {op.input_type for op in default_registry() if attrs.has(op.input_type)},
    key=lambda cls: (cls.__module__, cls.__qualname__),
)
ALL_WIRE_TYPES = sorted(
    {*CONTRACT_TYPES, *OPERATION_TYPES}, key=lambda cls: (cls.__module__, cls.__qualname__)
)

_PATHS = re.compile(r"\$\.(?:.*\.)?(?:path|working_directory|read_only_paths|required_paths)\b.*")
_ARGV = re.compile(r"\$\.(?:recipe\.)?argv\[\d+\]")
_CAPABILITY = re.compile(r"\$\.(?:entrypoint\.)?capability")

# Rules the decoder applies and the schema does not spell, per type name: (code, path pattern).
DECODER_ONLY: dict[str, set[tuple[ErrorCode, re.Pattern[str]]]] = {
    # A reference or working path must be canonical (no "." or ".." component, no empty one);
    # an isolation path absolute and canonical.
    **{
        name: {(ErrorCode.INVALID_PATH, _PATHS)}
        for name in (
            "FiniteReviewCollectorProfile",
            "IsolationPolicy",
            "NamedReference",
        )
    },
    # An argument of the pinned command may not contain NUL.
    **{
        name: {(ErrorCode.INVALID_PATH, _PATHS), (ErrorCode.INVALID_VALUE, _ARGV)}
        for name in ("CommandRecipe", "CommandCollectorProfile")
    },
    # The entrypoint names this contract's capability; the schema says only "a string".
    "InstructionEntrypoint": {
        (ErrorCode.INVALID_VALUE, _CAPABILITY),
        (ErrorCode.INVALID_PATH, _PATHS),
    },
    "WorkflowTask": {(ErrorCode.INVALID_VALUE, _CAPABILITY), (ErrorCode.INVALID_PATH, _PATHS)},
    # status decides which of entrypoint and mismatch is present.
    "InstructionEntrypointResponse": {
        (ErrorCode.INVALID_VALUE, _CAPABILITY),
        (ErrorCode.INVALID_PATH, _PATHS),
        (ErrorCode.INVALID_VALUE, re.compile(r"\$\.status")),
    },
    # status decides which of content/byte_length/code are present; sha256 and byte_length
    # describe content.
    "ReferenceFetchResponse": {
        (ErrorCode.INVALID_VALUE, re.compile(r"\$\.(?:code|content|byte_length|sha256)")),
    },
    # A heartbeat carries no reason; every other action needs one.
    "TaskMutationRequest": {
        (ErrorCode.INVALID_VALUE, re.compile(r"\$\.reason")),
        (ErrorCode.MISSING_FIELD, re.compile(r"\$\.reason")),
    },
    # Findings may not contain NUL (anywhere in an assertion's criteria).
    "CriterionResult": {(ErrorCode.INVALID_VALUE, re.compile(r"\$\.findings\[\d+\]"))},
    # The trust class decides whether executor and provenance are present; findings as above.
    "TaskResultAssertion": {
        (ErrorCode.INVALID_VALUE, re.compile(r"\$\.(?:executor|executor_provenance|trust_class)")),
        (ErrorCode.MISSING_FIELD, re.compile(r"\$\.executor")),
        (ErrorCode.INVALID_VALUE, re.compile(r"\$\.criteria\[\d+\]\.findings\[\d+\]")),
        # One row per criterion: JSON Schema's uniqueItems compares whole rows, not one key.
        (ErrorCode.INVALID_CRITERIA, re.compile(r"\$\.criteria\[\d+\]\.criterion")),
    },
    # The new fence must exceed the old one; dispositions, observed states and effects agree.
    "FenceSupersession": {(ErrorCode.INVALID_RECOVERY, re.compile(r"\$\.new_fence"))},
    "TaskRecoveryEnvelope": {(ErrorCode.INVALID_RECOVERY, re.compile(r"\$\..*"))},
    # A JSON state or payload has a byte budget (QUEUE_PAYLOAD_MAX_BYTES and the like).
    **{
        name: {(ErrorCode.OUT_OF_BOUNDS, re.compile(r"\$\.(?:payload|state|result|checkpoint)"))}
        for name in ("CreateIn", "CheckpointWriteIn", "ExtUpdateIn", "CheckpointIn")
    },
}
# A cost is never negative (checked after decoding; the schema says "number").
DECODER_ONLY.setdefault("ExtUpdateIn", set()).add(
    (ErrorCode.OUT_OF_BOUNDS, re.compile(r"\$\.costUsd"))
)

PROFILE = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _allowed(cls: type[Any], err: TaskError) -> bool:
    rules = DECODER_ONLY.get(cls.__name__, set())
    return any(err.code is code and path.fullmatch(err.path or "") for code, path in rules)


@pytest.mark.parametrize("cls", ALL_WIRE_TYPES, ids=lambda c: c.__name__)
def test_every_document_drawn_from_a_schema_is_valid_and_decodes(cls):
    schema = json_schema(cls)
    validator = jsonschema.Draft202012Validator(schema)

    @PROFILE
    @given(from_schema(schema))
    def check(doc: Any) -> None:
        validator.validate(doc)
        refusal: TaskError | None = None
        try:
            decode(cls, doc)
        except TaskError as err:
            refusal = err
        assert refusal is None or _allowed(cls, refusal), (
            f"{cls.__name__}: the schema allows {doc!r}, the decoder says {refusal}"
        )

    check()


def test_the_registry_and_contract_types_are_all_covered():
    assert len(OPERATION_TYPES) > 40
    assert {"CreateIn", "ClaimIn", "CheckpointIn"} <= {c.__name__ for c in OPERATION_TYPES}
    assert set(CONTRACT_TYPES) <= set(ALL_WIRE_TYPES)


def test_a_free_json_integer_is_any_integer_as_its_schema_says():
    # Found by the property above: the default u64 range of a field applied to a top-level
    # integer of a free JSON field (a nested one was accepted), which the schema allows.
    create = next(c for c in OPERATION_TYPES if c.__name__ == "CreateIn")
    for value in (-1, 2**64, -(2**70)):
        assert decode(create, {"verb": "v", "payload": value}).payload == value
        assert decode(create, {"verb": "v", "payload": [value]}).payload == [value]
    # An integer field keeps its range (the schema publishes it).
    reorder = next(c for c in OPERATION_TYPES if c.__name__ == "ReorderIn")
    with pytest.raises(TaskError) as info:
        decode(reorder, {"taskId": "t", "priority": 2**64})
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS
    assert info.value.path == "$.priority"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string", "format": "email"}, "format"),
        ({"type": "string", "pattern": "[a-z]+"}, "not anchored"),
        ({"oneOf": [{"type": "null"}]}, "oneOf"),
        ({"$ref": "#/$defs/Missing"}, "Missing"),
        ({"type": "object", "properties": {}, "additionalProperties": True}, "additional"),
        (
            {"type": "object", "properties": {}, "required": ["a"], "additionalProperties": False},
            "a",
        ),
        ({"type": "array"}, "items"),
        ({"type": "tuple"}, "tuple"),
    ],
)
def test_a_rule_the_generator_does_not_know_is_refused_not_ignored(schema, message):
    with pytest.raises(UnsupportedSchemaError, match=message):
        from_schema(schema)


@settings(max_examples=50)
@given(
    from_schema(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 2, "maximum": 4},
                "tag": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/Kid"}, "maxItems": 2},
                "path": {"type": "string"},
            },
            "required": ["n", "kids"],
            "additionalProperties": False,
            "$defs": {
                "Kid": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "c": {"const": 7}},
                    "required": ["path", "c"],
                    "additionalProperties": False,
                }
            },
        },
        fields={"path": st.just("fixed")},
    )
)
def test_documents_honour_every_keyword_and_overrides_apply_at_any_depth(doc):
    assert set(doc) >= {"n", "kids"}
    assert set(doc) <= {"n", "tag", "kids", "path"}
    assert 2 <= doc["n"] <= 4
    assert doc.get("tag") is None or (isinstance(doc["tag"], str) and len(doc["tag"]) <= 3)
    assert len(doc["kids"]) <= 2
    assert all(kid == {"path": "fixed", "c": 7} for kid in doc["kids"])
    assert doc.get("path", "fixed") == "fixed"


@settings(max_examples=30)
@given(wire_values(contract.WorkflowTaskSubject))
def test_wire_values_are_decoded_instances(subject):
    assert isinstance(subject, contract.WorkflowTaskSubject)
    assert re.fullmatch(r"[0-9a-f]{64}", subject.revision)
