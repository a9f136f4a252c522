import enum
import importlib
import inspect
import json
import pkgutil
from typing import Any, Literal

import attrs
import pytest
import taskcore.contract
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from taskcore.codec import Codec, wire_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.schema import SchemaBuilder, error_schema, input_schema, json_schema
from taskcore.service import default_registry


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Row:
    criterion: str = wire_field(min_len=1, max_len=8, pattern=r"[a-z]+")
    outcome: Colour = wire_field()
    findings: tuple[str, ...] = wire_field(max_len=3, item_max_len=5, item_pattern=r"[a-z]*")


@attrs.frozen(kw_only=True)
class Doc:
    version: int = wire_field(version=True)
    task_id: str = wire_field(wire="taskId", max_len=12)
    rows: tuple[Row, ...] = wire_field(max_len=2)
    note: str | None = wire_field(max_len=4)
    count: int = wire_field(default=0, lo=-3, hi=3)
    flag: bool = wire_field(default=False)
    mode: Literal["a", "b"] = wire_field(default="a")
    extra: dict[str, Any] | None = wire_field(default=None)


@attrs.frozen(kw_only=True)
class Node:
    name: str = wire_field()
    children: tuple["Node", ...] = wire_field(factory=tuple)


GOOD = {
    "version": 1,
    "taskId": "t1",
    "rows": [{"criterion": "ab", "outcome": "red", "findings": ["x"]}],
    "note": None,
}


def _accepts(doc: Any) -> bool:
    try:
        Codec().structure(doc, Doc)
    except TaskError:
        return False
    return True


VALIDATOR = Draft202012Validator(json_schema(Doc))


def test_generated_schemas_are_valid_draft_2020_12():
    Draft202012Validator.check_schema(json_schema(Doc))
    Draft202012Validator.check_schema(json_schema(Node))


def test_required_fields_are_those_without_defaults_even_when_nullable():
    schema = input_schema(Doc)
    assert schema["required"] == ["version", "taskId", "rows", "note"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["note"] == {
        "anyOf": [{"type": "string", "maxLength": 4}, {"type": "null"}]
    }


def test_wire_names_ranges_enums_literals_and_version_are_published():
    props = input_schema(Doc)["properties"]
    assert "taskId" in props
    assert "task_id" not in props
    assert props["count"] == {"type": "integer", "minimum": -3, "maximum": 3, "default": 0}
    assert props["version"] == {"type": "integer", "const": 1}
    assert props["mode"] == {"enum": ["a", "b"], "default": "a"}
    row = input_schema(Doc)["$defs"]["Row"]
    assert row["properties"]["outcome"] == {"type": "string", "enum": ["red", "blue"]}
    assert row["properties"]["findings"] == {
        "type": "array",
        "items": {"type": "string", "maxLength": 5, "pattern": "^(?:[a-z]*)$"},
        "maxItems": 3,
    }


def test_recursive_types_refer_to_themselves():
    schema = input_schema(Node)
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert Draft202012Validator(schema).is_valid({"name": "a", "children": [{"name": "b"}]})


def test_colliding_class_names_get_distinct_definitions():
    def make():
        @attrs.frozen(kw_only=True)
        class Row:
            n: int = wire_field()

        return Row

    builder = SchemaBuilder()
    first, second = builder.of(make()), builder.of(make())
    assert first != second
    assert sorted(builder.defs) == ["Row", "Row_2"]


def test_unsupported_types_are_a_programming_error():
    @attrs.frozen(kw_only=True)
    class Pair:
        pair: tuple[int, str] = wire_field()

    with pytest.raises(TypeError):
        input_schema(Pair)


def test_openapi_prefix_points_into_components():
    builder = SchemaBuilder(ref_prefix="#/components/schemas/")
    assert builder.of(Doc) == {"$ref": "#/components/schemas/Doc"}
    assert "Row" in builder.defs


def test_error_schema_lists_every_code():
    codes = error_schema()["properties"]["code"]["enum"]
    assert codes == [c.value for c in ErrorCode]
    assert Draft202012Validator(error_schema()).is_valid(
        TaskError(ErrorCode.UNKNOWN_FIELD, "x", path="$.a").to_json()
    )


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="abcXYZ1 ", max_size=14),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text("abc", max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = ["version", "taskId", "rows", "note", "count", "flag", "mode", "extra", "colour"]
ROW_FIELDS = ["criterion", "outcome", "findings", "other"]


@st.composite
def mutated_docs(draw):
    doc = json.loads(json.dumps(GOOD))
    for _ in range(draw(st.integers(0, 3))):
        target = doc
        keys = FIELDS
        if draw(st.booleans()) and isinstance(doc.get("rows"), list) and doc["rows"]:
            target = doc["rows"][0] if isinstance(doc["rows"][0], dict) else doc
            keys = ROW_FIELDS if target is not doc else FIELDS
        key = draw(st.sampled_from(keys))
        if draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            special = {
                "outcome": st.sampled_from(["red", "blue", "green"]),
                "mode": st.sampled_from(["a", "b", "c"]),
                "version": st.sampled_from([1, 2, True]),
                "findings": st.lists(st.text("ab!", max_size=6), max_size=4),
            }
            target[key] = draw(special.get(key, json_values))
    return doc


@given(mutated_docs())
def test_schema_and_strict_decoder_agree(doc):
    assert VALIDATOR.is_valid(doc) == _accepts(doc)


def _attrs_classes(package):
    seen = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if attrs.has(obj) and obj.__module__ == module.__name__:
                seen.append(obj)
    return seen


def test_every_contract_type_has_a_valid_schema():
    classes = _attrs_classes(taskcore.contract)
    assert classes, "the contract package defines wire types"
    for cls in classes:
        Draft202012Validator.check_schema(json_schema(cls))


def test_every_registered_operation_has_valid_input_and_output_schemas():
    for op in default_registry():
        if op.raw_input:
            continue
        Draft202012Validator.check_schema(json_schema(op.input_type))
        if op.output_type is not None:
            Draft202012Validator.check_schema(json_schema(op.output_type))
