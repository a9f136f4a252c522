"""The strict parser skips the tree walk only where the walk could not refuse anything.

``parse_json`` must answer exactly as the reference (parse, then always walk the tree with
``validate_tree``): the same value, or the same error code, message and JSON path.
"""

import json
import sys

import orjson
from hypothesis import given
from hypothesis import strategies as st
from taskcore.errors import TaskError
from taskcore.jsontext import _constant, _no_duplicates, _plain, dumps, parse_json, validate_tree


def _reference(raw: bytes, max_depth: int):
    try:
        text = raw.decode("utf-8")
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_constant)
        validate_tree(value, max_depth=max_depth)
        return ("value", value)
    except TaskError as err:
        return ("refused", err.code, err.path, str(err))
    except (ValueError, RecursionError):
        return ("malformed",)


def _ours(raw: bytes, max_depth: int):
    try:
        return ("value", parse_json(raw, max_depth=max_depth))
    except TaskError as err:
        if err.code.value == "MALFORMED_JSON" and "duplicate" not in str(err):
            return ("malformed",)  # the reference's ValueError, worded by json
        return ("refused", err.code, err.path, str(err))


# Pieces of JSON text that matter to the skipped walk: surrogate escapes (lone, paired,
# behind an escaped backslash), huge and ordinary numbers, NaN/Infinity, brackets inside
# strings, duplicate keys.
_atoms = st.sampled_from(
    [
        '"\\ud800"',
        '"\\udfff x"',
        '"\\ud83d\\ude00"',
        '"\\\\ud800"',
        '"\\u00e9"',
        '"[[[{{{"',
        '"x"',
        "1e400",
        "-1e400",
        "1e308",
        "1.5e-400",
        "9" * 320,
        "9" * 320 + ".5",
        "123",
        "-0",
        "0.5",
        "NaN",
        "Infinity",
        "-Infinity",
        "true",
        "null",
        "[]",
        "{}",
    ]
)


_documents = st.recursive(
    _atoms,
    lambda c: (
        st.lists(c, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]")
        | st.lists(st.tuples(st.sampled_from(["a", "b", "[", "a"]), c), max_size=3).map(
            lambda kv: "{" + ", ".join(f'"{k}": {v}' for k, v in kv) + "}"
        )
    ),
    max_leaves=12,
)


@given(_documents, st.integers(1, 6))
def test_the_parser_answers_as_the_reference_walk(doc, max_depth):
    raw = doc.encode()
    assert _ours(raw, max_depth) == _reference(raw, max_depth)


@given(st.integers(1, 80), st.integers(1, 80), st.booleans())
def test_nesting_is_measured_outside_strings(depth, limit, as_object):
    open_, close = ('{"k": ', "}") if as_object else ("[", "]")
    raw = (open_ * depth + '"]]]]{{{{"' + close * depth).encode()
    assert _plain(raw, limit) is (depth <= limit)
    assert _ours(raw, limit) == _reference(raw, limit)


def test_a_document_with_no_refusable_content_is_not_walked():
    assert _plain(b'{"a": [1, {"b": "x\\"y"}], "c": "\\u00e9"}', 3)
    assert not _plain(b'["\\ud800"]', 64)


# -- compact documents (what our clients send) go through orjson, checked by a round trip ----

_compact_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 0])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(['\x00\x1f\x7f\u2028"\\/', "é😀", "[[{{"])
)
_compact_trees = st.recursive(
    _compact_leaves,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=15,
)


@given(_compact_trees, st.integers(1, 8), st.sampled_from(["json", "orjson"]))
def test_compact_text_is_read_as_the_reference_reads_it(tree, max_depth, encoder):

    doc = {"t": tree}
    if encoder == "json":
        raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    else:
        try:
            raw = orjson.dumps(doc)
        except TypeError:  # an integer beyond 64 bits
            raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    assert _ours(raw, max_depth) == _reference(raw, max_depth)


@given(st.sampled_from(['{"a":1,"a":2}', '{"a":{"b":1,"b":1}}', '[{"x":[],"x":null}]']))
def test_a_duplicate_key_in_compact_text_is_still_refused(text):
    assert _ours(text.encode(), 64)[0] == "refused"
    assert _ours(text.encode(), 64) == _reference(text.encode(), 64)


@given(
    st.sampled_from(
        [
            '{"a":"\\ud800"}',
            '{"a":1e400}',
            '{"a":NaN}',
            '{"a":-0}',
            '{"a":18446744073709551616}',
            "[" * 70 + "]" * 70,
        ]
    )
)
def test_what_orjson_refuses_or_changes_falls_to_the_reference(text):
    assert _ours(text.encode(), 64) == _reference(text.encode(), 64)


# -- dumps: orjson for the trees whose bytes it writes exactly as the standard encoder ------

_any_ints = st.integers(-(2**70), 2**70) | st.integers(-(2**63) - 2, 2**64 + 2)
_leaves = st.none() | st.booleans() | _any_ints | st.floats() | st.text() | st.just("\ud800")
_trees = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(st.integers(0, 3), inner, max_size=2)
    ),
    max_leaves=12,
)


def _encoded(make):
    try:
        return ("bytes", make())
    except Exception as exc:  # the kind of refusal must be the same too
        return ("raised", type(exc))


@given(_trees)
def test_dumps_writes_the_standard_encoder_s_bytes(tree):
    assert "orjson" in sys.modules  # imported above: the fast path is live
    reference = _encoded(
        lambda: json.dumps(tree, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
    )
    assert _encoded(lambda: dumps(tree)) == reference


def test_dumps_of_every_code_point_is_the_standard_encoder_s():
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    tree = {text[:300]: [text, {"k": text[::-1]}]}
    assert dumps(tree) == json.dumps(tree, ensure_ascii=False, separators=(",", ":")).encode()


def test_dumps_of_a_tree_that_holds_itself_is_the_standard_refusal():
    import pytest

    loop: list[object] = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps({"a": loop})
    wide = [[i] for i in range(10_000)]  # past the walk's budget: the standard encoder's bytes
    assert dumps(wide) == json.dumps(wide, separators=(",", ":")).encode()
