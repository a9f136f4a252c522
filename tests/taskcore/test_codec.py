import enum
import json
import math
import re
import typing

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.codec import Codec, dumps, parse_json, validate_tree, wire_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import JSON_MAX_DEPTH


class Outcome(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"


@attrs.frozen(kw_only=True)
class Row:
    criterion: str = wire_field(max_len=8, pattern=r"[a-z]+")
    outcome: Outcome = wire_field()
    findings: tuple[str, ...] = wire_field(max_len=3, item_max_len=5)


@attrs.frozen(kw_only=True)
class Doc:
    version: int = wire_field(version=True)
    task_id: str = wire_field(wire="taskId")
    criteria: tuple[Row, ...] = wire_field(max_len=4)
    provenance: str | None = wire_field()
    priority: int = wire_field(default=0, lo=-5, hi=5)
    ratio: float = wire_field(default=0.0)


GOOD = {
    "version": 1,
    "taskId": "t",
    "criteria": [{"criterion": "a", "outcome": "passed", "findings": ["x"]}],
    "provenance": None,
}


def _error(mutate):
    import copy

    doc = copy.deepcopy(GOOD)
    mutate(doc)
    with pytest.raises(TaskError) as info:
        Codec().decode(Doc, doc)
    return info.value.code, info.value.path


def test_good_document_round_trips_with_wire_names():
    codec = Codec()
    doc = codec.decode(Doc, GOOD)
    assert doc.task_id == "t"
    out = codec.unstructure(doc)
    assert out["taskId"] == "t"
    assert "task_id" not in out
    assert codec.decode(Doc, out) == doc


def test_unsupported_version():
    assert _error(lambda d: d.update(version=2)) == (ErrorCode.UNSUPPORTED_VERSION, "$.version")


def test_true_is_not_one():
    assert _error(lambda d: d.update(version=True)) == (ErrorCode.WRONG_TYPE, "$.version")


def test_string_is_not_an_integer():
    assert _error(lambda d: d.update(priority="1")) == (ErrorCode.WRONG_TYPE, "$.priority")


def test_float_is_not_an_integer():
    assert _error(lambda d: d.update(priority=1.0)) == (ErrorCode.WRONG_TYPE, "$.priority")


def test_integer_is_accepted_as_a_number_but_bool_is_not():
    assert Codec().decode(Doc, {**GOOD, "ratio": 2}).ratio == 2.0
    assert _error(lambda d: d.update(ratio=True)) == (ErrorCode.WRONG_TYPE, "$.ratio")


def test_unknown_field_names_its_path():
    assert _error(lambda d: d.update(colour=1)) == (ErrorCode.UNKNOWN_FIELD, "$.colour")


def test_python_name_is_not_accepted_for_a_renamed_field():
    def mutate(d):
        d["task_id"] = d.pop("taskId")

    code, _ = _error(mutate)
    assert code in (ErrorCode.UNKNOWN_FIELD, ErrorCode.MISSING_FIELD)


def test_missing_nullable_field_is_still_missing():
    assert _error(lambda d: d.pop("provenance")) == (ErrorCode.MISSING_FIELD, "$.provenance")


def test_nested_enum_error_has_full_path():
    def mutate(d):
        d["criteria"].append({"criterion": "b", "outcome": "maybe", "findings": []})

    assert _error(mutate) == (ErrorCode.INVALID_VALUE, "$.criteria[1].outcome")


def test_nested_unknown_field_has_full_path():
    def mutate(d):
        d["criteria"][0]["extra"] = 1

    assert _error(mutate) == (ErrorCode.UNKNOWN_FIELD, "$.criteria[0].extra")


def test_string_is_not_an_array():
    assert _error(lambda d: d.update(criteria="ab")) == (ErrorCode.WRONG_TYPE, "$.criteria")


def test_object_is_not_an_array():
    assert _error(lambda d: d.update(criteria={"a": 1})) == (ErrorCode.WRONG_TYPE, "$.criteria")


def test_array_is_not_an_object():
    assert _error(lambda d: d.update(criteria=[[1]])) == (ErrorCode.WRONG_TYPE, "$.criteria[0]")


def test_collection_bound():
    row = GOOD["criteria"][0]
    assert _error(lambda d: d.update(criteria=[row] * 5)) == (ErrorCode.OUT_OF_BOUNDS, "$.criteria")


def test_item_string_bound_has_item_path():
    def mutate(d):
        d["criteria"][0]["findings"] = ["ok", "toolong"]

    assert _error(mutate) == (ErrorCode.OUT_OF_BOUNDS, "$.criteria[0].findings[1]")


def test_pattern():
    def mutate(d):
        d["criteria"][0]["criterion"] = "UPPER"

    assert _error(mutate) == (ErrorCode.INVALID_VALUE, "$.criteria[0].criterion")


def test_integer_range():
    assert _error(lambda d: d.update(priority=6)) == (ErrorCode.OUT_OF_BOUNDS, "$.priority")
    assert _error(lambda d: d.update(priority=-6)) == (ErrorCode.OUT_OF_BOUNDS, "$.priority")


def test_top_level_must_be_an_object():
    with pytest.raises(TaskError) as info:
        Codec().decode(Doc, b"[1]")
    assert info.value.code is ErrorCode.WRONG_TYPE
    assert info.value.path == "$"


def test_lone_surrogate_string_is_refused():
    with pytest.raises(TaskError) as info:
        Codec().decode(Doc, b'{"version":1,"taskId":"\\ud800","criteria":[],"provenance":null}')
    assert info.value.code is ErrorCode.BAD_INPUT
    assert info.value.path == "$.taskId"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{", ErrorCode.MALFORMED_JSON),
        (b'{"a":1,"a":2}', ErrorCode.MALFORMED_JSON),
        (b"\xef\xbb\xbf{}", ErrorCode.MALFORMED_JSON),
        (b'{"a":"\xff"}', ErrorCode.MALFORMED_JSON),
        (b"[" * (JSON_MAX_DEPTH + 1) + b"]" * (JSON_MAX_DEPTH + 1), ErrorCode.OUT_OF_BOUNDS),
        (b"[" * 100_000, ErrorCode.OUT_OF_BOUNDS),
    ],
)
def test_parse_json_refusals(raw, code):
    with pytest.raises(TaskError) as info:
        parse_json(raw)
    assert info.value.code in (code, ErrorCode.MALFORMED_JSON)
    if code is ErrorCode.OUT_OF_BOUNDS and raw.endswith(b"]"):
        assert info.value.code is ErrorCode.OUT_OF_BOUNDS


def test_size_is_checked_before_parsing():
    with pytest.raises(TaskError) as info:
        parse_json(b" " * 11, max_bytes=10)
    assert info.value.code is ErrorCode.PAYLOAD_TOO_LARGE


rows = st.builds(
    lambda c, o, f: {"criterion": c, "outcome": o, "findings": f},
    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    st.sampled_from(["passed", "failed"]),
    st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=5), max_size=3),
)
docs = st.fixed_dictionaries(
    {
        "version": st.just(1),
        "taskId": st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
        "criteria": st.lists(rows, max_size=4),
        "provenance": st.none() | st.text(st.characters(exclude_categories=("Cs",)), max_size=5),
        "priority": st.integers(-5, 5),
        "ratio": st.floats(allow_nan=False, allow_infinity=False),
    }
)


@given(docs)
def test_round_trip_property(doc):
    codec = Codec()
    decoded = codec.decode(Doc, dumps(doc))
    assert codec.unstructure(decoded) == doc


@given(
    docs,
    st.sampled_from(["version", "taskId", "criteria", "provenance"]),
    st.sampled_from([True, "1", 1.5, [], {}]),
)
def test_any_wrong_typed_required_field_is_refused_with_its_path(doc, key, bad):
    doc = dict(doc)
    if key in ("provenance", "taskId") and isinstance(bad, str):
        return  # a string is valid there
    if key == "criteria" and bad == []:
        return  # an empty array is valid
    doc[key] = bad
    with pytest.raises(TaskError) as info:
        Codec().decode(Doc, dumps(doc))
    assert info.value.path == f"$.{key}"


@given(
    docs,
    st.text(min_size=1, max_size=10).filter(
        lambda k: k not in {"version", "taskId", "criteria", "provenance", "priority", "ratio"}
    ),
)
def test_any_unknown_key_is_refused(doc, key):
    doc = {**doc, key: 1}
    with pytest.raises(TaskError) as info:
        Codec().decode(Doc, dumps(doc))
    assert info.value.code is ErrorCode.UNKNOWN_FIELD


@attrs.frozen(kw_only=True)
class Tagged:
    kind: typing.Literal["command"] = wire_field()
    versions: tuple[int, ...] = wire_field(max_len=4)
    names: tuple[str, ...] = wire_field(max_len=4, item_max_len=3)


def _tagged_error(**changes):
    doc = {"kind": "command", "versions": [1], "names": ["a"], **changes}
    with pytest.raises(TaskError) as info:
        Codec().decode(Tagged, doc)
    return info.value.code, info.value.path


def test_a_literal_of_the_wrong_json_type_is_wrong_type():
    assert _tagged_error(kind=1) == (ErrorCode.WRONG_TYPE, "$.kind")
    assert _tagged_error(kind=1.5) == (ErrorCode.WRONG_TYPE, "$.kind")


def test_a_literal_with_another_string_is_invalid_value():
    assert _tagged_error(kind="script") == (ErrorCode.INVALID_VALUE, "$.kind")


@pytest.mark.parametrize("bad", [-1, 2**64])
def test_integer_items_are_bounded_to_u64_with_their_path(bad):
    assert _tagged_error(versions=[1, bad]) == (ErrorCode.OUT_OF_BOUNDS, "$.versions[1]")


@pytest.mark.parametrize("bad", [True, "1", 1.0])
def test_integer_items_of_another_type_are_wrong_type(bad):
    assert _tagged_error(versions=[bad]) == (ErrorCode.WRONG_TYPE, "$.versions[0]")


def test_a_negative_integer_among_strings_is_wrong_type_not_out_of_bounds():
    assert _tagged_error(names=["a", -1]) == (ErrorCode.WRONG_TYPE, "$.names[1]")


def test_depth_counts_containers_only():
    deep = 1
    for _ in range(JSON_MAX_DEPTH):
        deep = [deep]
    parse_json(dumps(deep))  # 64 arrays around a scalar: exactly the limit
    with pytest.raises(TaskError) as info:
        parse_json(dumps([deep]))
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS


@attrs.frozen(kw_only=True)
class _Later:
    a: int = wire_field()
    added: int | None = wire_field(default=None, omit_none=True)


def test_an_omit_none_field_is_optional_on_the_wire_and_left_out_while_none():
    codec = Codec()
    assert codec.dumps(_Later(a=1)) == b'{"a":1}'
    assert codec.dumps(_Later(a=1, added=2)) == b'{"a":1,"added":2}'
    assert codec.decode(_Later, b'{"a":1}') == _Later(a=1)
    assert codec.decode(_Later, b'{"a":1,"added":null}') == _Later(a=1)
    with pytest.raises(TypeError):
        wire_field(default=0, omit_none=True)


# -- numbers and strings JSON text cannot carry: every door refuses them with BAD_INPUT and a path


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (b'{"a":NaN}', "$.a"),
        (b'{"a":Infinity}', "$.a"),
        (b'{"a":[1,-Infinity]}', "$.a[1]"),
        (b'{"a":{"b":1e400}}', "$.a.b"),
        (b'{"a":-1e999}', "$.a"),
        (b'{"payload":{"note":"\\ud800"}}', "$.payload.note"),
        (b'{"a":["ok","\\udfff tail"]}', "$.a[1]"),
        (b'{"a":{"\\ud800":1}}', "$.a"),
        (b'{"a b":{"c":NaN}}', '$["a b"].c'),
    ],
)
def test_non_finite_numbers_and_lone_surrogates_are_bad_input_with_a_path(raw, path):
    with pytest.raises(TaskError) as info:
        parse_json(raw)
    assert (info.value.code, info.value.path) == (ErrorCode.BAD_INPUT, path)


def test_an_escaped_surrogate_pair_is_one_valid_character():
    assert parse_json(b'{"a":"\\ud83d\\ude00"}') == {"a": "\U0001f600"}


@pytest.mark.parametrize(
    ("tree", "code", "path"),
    [
        ({"state": {"x": math.nan}}, ErrorCode.BAD_INPUT, "$.state.x"),
        ({"state": [math.inf]}, ErrorCode.BAD_INPUT, "$.state[0]"),
        ({"s": "\ud800"}, ErrorCode.BAD_INPUT, "$.s"),
        ({"s": {1: "x"}}, ErrorCode.BAD_INPUT, "$.s"),
        ({"s": b"bytes"}, ErrorCode.BAD_INPUT, "$.s"),
        ({"s": {"a", "b"}}, ErrorCode.BAD_INPUT, "$.s"),
    ],
)
def test_a_tree_that_arrives_as_a_dict_gets_the_same_check(tree, code, path):
    # MCP tool arguments and in-process calls never pass through parse_json.
    with pytest.raises(TaskError) as info:
        validate_tree(tree)
    assert (info.value.code, info.value.path) == (code, path)
    with pytest.raises(TaskError) as info:
        Codec().decode(Doc, {**GOOD, "extra": tree})
    assert info.value.code is code
    assert info.value.path == "$.extra" + path[1:]


def test_depth_of_a_dict_tree_is_bounded_too():
    deep: object = 1
    for _ in range(JSON_MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(TaskError) as info:
        validate_tree({"a": deep})
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BAD_LEAVES = {
    "nan": ("NaN", math.nan),
    "inf": ("Infinity", math.inf),
    "-inf": ("-Infinity", -math.inf),
    "1e400": ("1e400", math.inf),
    "-1e999": ("-1e999", -math.inf),
    "surrogate": ('"\\ud800"', "\ud800"),
}
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("key"), st.text(max_size=6)),
        st.tuples(st.just("index"), st.integers(0, 3)),
    ),
    max_size=6,
)


@given(
    steps=_steps,
    leaf=st.sampled_from(sorted(_BAD_LEAVES)),
    filler=st.lists(_scalars, min_size=3, max_size=3),
)
def test_a_bad_leaf_anywhere_is_refused_with_its_path_as_text_and_as_a_tree(steps, leaf, filler):
    marker = "@@LEAF@@"
    text_value: object = marker
    tree_value: object = _BAD_LEAVES[leaf][1]
    path = ""
    for kind, step in reversed(steps):
        if kind == "key":
            text_value, tree_value = {step: text_value}, {step: tree_value}
            shown = f".{step}" if _IDENT.fullmatch(step) else f"[{json.dumps(step)}]"
        else:
            text_value = [*filler[:step], text_value]
            tree_value = [*filler[:step], tree_value]
            shown = f"[{min(step, len(filler))}]"
        path = shown + path
    document = {"wrapped": text_value}
    raw = json.dumps(document).replace(f'"{marker}"', _BAD_LEAVES[leaf][0]).encode()
    expected = "$.wrapped" + path
    with pytest.raises(TaskError) as info:
        parse_json(raw)
    assert (info.value.code, info.value.path) == (ErrorCode.BAD_INPUT, expected)
    with pytest.raises(TaskError) as info:
        validate_tree({"wrapped": tree_value})
    assert (info.value.code, info.value.path) == (ErrorCode.BAD_INPUT, expected)


@given(
    st.recursive(
        _scalars,
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
        max_leaves=20,
    )
)
def test_any_finite_tree_of_valid_unicode_passes_and_round_trips(tree):
    validate_tree(tree)
    assert parse_json(dumps({"t": tree})) == {"t": tree}


# -- the fast path: accepts exactly what the converter accepts, and yields the same value ------

import copy  # noqa: E402
import pathlib  # noqa: E402

from taskcore.contract import TaskResultAssertion  # noqa: E402
from taskcore.limits import ASSERTION_MAX_BYTES  # noqa: E402

REFERENCE = Codec(fast=False)


@attrs.frozen(kw_only=True)
class Mixed:
    mode: typing.Literal["a", "b"] = wire_field()
    counts: tuple[int, ...] = wire_field(max_len=3, lo=1, hi=9)
    extra: dict[str, typing.Any] = wire_field(factory=dict)
    anything: typing.Any = wire_field(default=None)
    maybe: Outcome | None = wire_field(default=None)
    digests: tuple[str, ...] = wire_field(default=(), item_pattern=r"[0-9a-f]{4}", min_len=0)
    name: str = wire_field(default="n", min_len=1, max_len=6, pattern=r"[A-Za-z0-9._-]{1,6}")
    flag: bool = wire_field(default=False)
    row: Row | None = wire_field(default=None)


MIXED = {
    "mode": "a",
    "counts": [1, 2],
    "extra": {"k": [1]},
    "anything": {"x": None},
    "maybe": "failed",
    "digests": ["00ff"],
    "name": "a.b-c",
    "flag": True,
    "row": {"criterion": "b", "outcome": "failed", "findings": []},
}
FULL_DOC = {**GOOD, "priority": 5, "ratio": 1.5}
GOLDEN_ASSERTIONS = [
    json.loads(p.read_text())["assertion"]
    for p in sorted((pathlib.Path(__file__).parents[2] / "golden" / "observations").glob("*.json"))
]
_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-6, 12)
    | st.sampled_from([2**64 - 1, 2**64, -(2**63)])
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=6)
    | st.sampled_from(["passed", "failed", "a", "b", "00ff", "x" * 9, "\x00", "0" * 64, "é"])
)
_values = st.recursive(
    _leaves,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=2),
    max_leaves=6,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _paths(child, (*prefix, index))


def _mutate(data, doc):
    for _ in range(data.draw(st.integers(0, 3))):
        path = data.draw(st.sampled_from(list(_paths(doc))))
        *parents, last = path or ("",)
        holder = doc
        for step in parents:
            holder = holder[step]
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if not path:
            if action == "replace":
                doc = data.draw(_values)
            continue
        if action == "replace":
            holder[last] = data.draw(_values)
        elif action == "delete":
            del holder[last]
        elif isinstance(holder[last], dict):
            holder[last][data.draw(st.text(max_size=8))] = data.draw(_values)
        elif isinstance(holder[last], list):
            holder[last].append(data.draw(_values))
    return doc


def _outcome(codec, cls, raw):
    try:
        return ("decoded", codec.decode(cls, raw, max_bytes=ASSERTION_MAX_BYTES))
    except TaskError as err:
        return ("refused", err.code, err.path, str(err))


@pytest.mark.parametrize(
    ("cls", "base"),
    [
        (Doc, FULL_DOC),
        (Mixed, MIXED),
        (TaskResultAssertion, GOLDEN_ASSERTIONS[0]),
    ],
    ids=["doc", "mixed", "golden"],
)
@given(data=st.data())
def test_the_fast_path_decodes_and_refuses_exactly_as_the_converter(cls, base, data):
    doc = _mutate(data, copy.deepcopy(base))
    raw = json.dumps(doc, ensure_ascii=data.draw(st.booleans())).encode()
    assert _outcome(Codec(), cls, raw) == _outcome(REFERENCE, cls, raw)
    if isinstance(doc, dict):  # a tree (MCP arguments): the other fast path
        assert _outcome(Codec(), cls, doc) == _outcome(REFERENCE, cls, doc)
        fast = Codec()
        try:
            expected = ("structured", REFERENCE.structure(doc, cls))
        except TaskError as err:
            expected = ("refused", err.code, err.path, str(err))
        try:
            got = ("structured", fast.structure(doc, cls))
        except TaskError as err:
            got = ("refused", err.code, err.path, str(err))
        assert got == expected


_PROBES = [
    None,
    True,
    0,
    1,
    5,
    6,
    -5,
    -6,
    9,
    10,
    2**64 - 1,
    2**64,
    -1,
    1.5,
    "",
    "a",
    "A",
    "abcdefgh",
    "abcdefghi",
    "passed",
    "b",
    "00ff",
    "00FF",
    "0" * 64,
    "0" * 63,
    "g" * 64,
    "x" * 4097,
    "\x00",
    [],
    ["x"],
    ["00ff"],
    [1],
    [1, 2, 3, 4],
    ["a"] * 33,
    {},
    {"criterion": "a"},
]


@pytest.mark.parametrize(
    ("cls", "base"),
    [(Doc, FULL_DOC), (Mixed, MIXED), (TaskResultAssertion, GOLDEN_ASSERTIONS[0])],
    ids=["doc", "mixed", "golden"],
)
def test_every_probe_at_every_place_gets_the_converters_answer(cls, base):
    for path in _paths(base):
        if not path:
            continue
        # One codec per place: its first probe meets hooks being built, the rest the built
        # ones (a fresh codec per probe spent 90 % of this test compiling the same hooks).
        fast = Codec()
        for probe in [*_PROBES, "delete"]:
            doc = copy.deepcopy(base)
            holder = doc
            for step in path[:-1]:
                holder = holder[step]
            if probe == "delete":
                del holder[path[-1]]
            else:
                holder[path[-1]] = probe
            raw = json.dumps(doc).encode()
            assert _outcome(fast, cls, raw) == _outcome(REFERENCE, cls, raw), (path, probe)
            assert _outcome(fast, cls, doc) == _outcome(REFERENCE, cls, doc), (path, probe)


@pytest.mark.parametrize("assertion", GOLDEN_ASSERTIONS)
def test_the_fast_path_alone_decodes_every_golden_assertion(assertion):
    codec = Codec()

    class NoConverter:
        def structure(self, *_args):
            raise AssertionError("the fast path gave up on a valid document")

    codec.converter = NoConverter()
    raw = json.dumps(assertion).encode()
    assert codec.decode(TaskResultAssertion, raw) == REFERENCE.decode(TaskResultAssertion, raw)
    assert codec.structure(assertion, TaskResultAssertion) == REFERENCE.decode(
        TaskResultAssertion, raw
    )


def test_a_lone_surrogate_is_refused_by_structure_of_an_unchecked_tree():
    for codec in (Codec(), REFERENCE):
        with pytest.raises(TaskError) as info:
            codec.structure({**GOOD, "taskId": "\ud800"}, Doc)
        assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.taskId")
