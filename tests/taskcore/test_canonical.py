import enum

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.canonical import canonical_json, canonical_value, encode_string
from taskcore.errors import ErrorCode, TaskError


class Colour(enum.Enum):
    DARK_RED = "dark_red"


@attrs.frozen
class Inner:
    zeta: int
    alpha: str


@attrs.frozen
class Outer:
    name: str
    inner: Inner
    items: tuple[int, ...]
    colour: Colour
    nothing: None


def test_declared_field_order_not_sorted():
    obj = Outer(
        name="n", inner=Inner(zeta=1, alpha="a"), items=(), colour=Colour.DARK_RED, nothing=None
    )
    assert canonical_json(obj) == (
        b'{"name":"n","inner":{"zeta":1,"alpha":"a"},"items":[],"colour":"dark_red","nothing":null}'
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"', b'"\\""'),
        ("\\", b'"\\\\"'),
        ("\b\t\n\f\r", b'"\\b\\t\\n\\f\\r"'),
        ("\x00\x01\x1f", b'"\\u0000\\u0001\\u001f"'),
        ("\x0b", b'"\\u000b"'),
        ("/", b'"/"'),
        ("\x7f", b'"\x7f"'),
        ("\u2028\u2029", '"\u2028\u2029"'.encode()),
        ("é😀", '"é😀"'.encode()),
    ],
)
def test_string_escapes(text, expected):
    assert encode_string(text) == expected


def test_lowercase_hex_for_other_controls():
    assert encode_string("\x1a") == b'"\\u001a"'


def test_integers_span_u64_and_refuse_outside():
    assert canonical_json([0, 2**64 - 1]) == b"[0,18446744073709551615]"
    for bad in (-1, 2**64):
        with pytest.raises(TaskError) as info:
            canonical_json(bad)
        assert info.value.code is ErrorCode.OUT_OF_BOUNDS


def test_floats_are_refused():
    with pytest.raises(TaskError) as info:
        canonical_json(1.5)
    assert info.value.code is ErrorCode.WRONG_TYPE


def test_lone_surrogate_is_refused():
    with pytest.raises(TaskError):
        canonical_json("\ud800")


def test_no_whitespace_or_trailing_newline():
    out = canonical_json({"a": [1, {"b": True, "c": False}]})
    assert out == b'{"a":[1,{"b":true,"c":false}]}'


def test_canonical_value_matches_bytes_tree():
    obj = Inner(zeta=3, alpha="x")
    assert canonical_value(obj) == {"zeta": 3, "alpha": "x"}


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(0, 2**64 - 1)
    | st.text(st.characters(exclude_categories=("Cs",)))
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(st.characters(exclude_categories=("Cs",)), max_size=5), children, max_size=4
        )
    ),
    max_leaves=20,
)


@given(json_values)
def test_canonical_bytes_parse_back_to_the_same_value(value):
    import json

    assert json.loads(canonical_json(value).decode("utf-8")) == value


@given(st.text(st.characters(exclude_categories=("Cs",))))
def test_only_ascii_controls_quote_and_backslash_are_escaped(text):
    body = encode_string(text).decode("utf-8")[1:-1]
    unescaped = body
    for ch in text:
        if ord(ch) >= 0x20 and ch not in '"\\':
            assert ch in unescaped


@pytest.mark.parametrize("code", range(0x20))
def test_every_c0_control_has_exactly_one_escape(code):
    named = {0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0C: b"\\f", 0x0D: b"\\r"}
    expected = named.get(code, f"\\u{code:04x}".encode())
    assert encode_string(chr(code)) == b'"' + expected + b'"'


@pytest.mark.parametrize(
    "text",
    ["\x7f", "\x80", "\u00a0", "\u2028", "\u2029", "\ufeff", "\U0001f600", "e\u0301", "/", "'"],
)
def test_everything_else_is_raw_utf8_without_normalization(text):
    assert encode_string(text) == b'"' + text.encode("utf-8") + b'"'


def test_zero_empty_arrays_and_empty_objects():
    assert canonical_json({"n": 0, "a": [], "o": {}, "s": ""}) == b'{"n":0,"a":[],"o":{},"s":""}'


def test_booleans_are_not_integers_and_integers_are_not_booleans():
    assert canonical_json([True, False, 1, 0]) == b"[true,false,1,0]"


def test_non_string_object_keys_are_refused():
    with pytest.raises(TaskError) as info:
        canonical_json({1: "x"})
    assert info.value.code is ErrorCode.WRONG_TYPE


def test_tuples_and_lists_are_arrays_in_order():
    assert canonical_json((3, [2, 1])) == b"[3,[2,1]]"


def test_an_omit_none_field_is_left_out_only_while_it_is_none():
    from taskcore.codec import wire_field

    @attrs.frozen(kw_only=True)
    class Later:
        a: int = wire_field()
        added: int | None = wire_field(default=None, omit_none=True)
        kept: int | None = wire_field(default=None)

    assert canonical_json(Later(a=1)) == b'{"a":1,"kept":null}'
    assert canonical_json(Later(a=1, added=0)) == b'{"a":1,"added":0,"kept":null}'
    assert canonical_value(Later(a=1)) == {"a": 1, "kept": None}


# -- the fast path (a plain tree through orjson) writes what the reference encoder writes ------

from taskcore import canonical as _canonical  # noqa: E402
from taskcore.canonical import canonical_json_replacing  # noqa: E402


def _reference(value):
    try:
        out: list[bytes] = []
        _canonical._emit(value, out)
        return ("bytes", b"".join(out))
    except TaskError as err:
        return ("refused", err.code, str(err))


def _fast(value):
    try:
        return ("bytes", canonical_json(value))
    except TaskError as err:
        return ("refused", err.code, str(err))


class Flavour(enum.Enum):
    SWEET = "sweet"
    ONE = 1


class Word(enum.StrEnum):
    HI = "hi"


@attrs.frozen
class Maybe:
    text: str | None
    flavour: Flavour
    words: tuple[str, ...]
    count: int
    skipped: str | None = attrs.field(
        default=None,
        metadata={"taskcore.rules": __import__("taskcore.codec").codec.FieldRules(omit_none=True)},
    )


_any_text = st.text(st.characters(), max_size=6)  # lone surrogates included
_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([2**64 - 1, 2**64, -(2**64)])
    | st.floats(allow_nan=True, allow_infinity=True)
    | _any_text
    | st.sampled_from([Flavour.SWEET, Flavour.ONE, Word.HI, '\x00\x1f\x7f\u2028"\\/'])
)
_values = st.recursive(
    _scalar,
    lambda c: (
        st.lists(c, max_size=3)
        | st.lists(c, max_size=3).map(tuple)
        | st.dictionaries(_any_text | st.integers(0, 2), c, max_size=3)
        | st.builds(
            Maybe,
            text=c,
            flavour=st.sampled_from(list(Flavour)) | c,
            words=st.lists(_any_text, max_size=3).map(tuple) | c,
            count=st.integers(-1, 2**64) | c,
            skipped=st.none() | c,
        )
        | st.builds(Inner, zeta=c, alpha=c)
    ),
    max_leaves=8,
)


@given(_values)
def test_the_fast_path_writes_the_reference_bytes_or_the_same_refusal(value):
    assert _fast(value) == _reference(value)


@given(st.text(st.characters(), max_size=20))
def test_every_string_is_written_as_the_reference_writes_it(text):
    assert _fast([text, {text: text}]) == _reference([text, {text: text}])


@given(_values, _values)
def test_replacing_a_field_writes_the_bytes_of_the_evolved_copy(text, words):
    obj = Maybe(text="t", flavour=Flavour.SWEET, words=(), count=1, skipped="s")
    for name, value in (("text", text), ("words", words), ("skipped", None), ("skipped", text)):
        try:
            expected = _reference(attrs.evolve(obj, **{name: value}))
        except TypeError:
            continue
        try:
            got = ("bytes", canonical_json_replacing(obj, name, value))
        except TaskError as err:
            got = ("refused", err.code, str(err))
        assert got == expected


@given(
    st.builds(
        Maybe,
        text=st.none() | _scalar,
        flavour=st.sampled_from(list(Flavour)) | _scalar,
        words=st.lists(_any_text | _scalar, max_size=3).map(tuple) | _scalar,
        count=st.integers(-2, 2**64 + 1) | _scalar,
        skipped=st.none() | _scalar,
    )
)
def test_every_declared_field_kind_agrees_with_the_reference(obj):
    assert _fast(obj) == _reference(obj)


def test_the_fast_path_writes_a_contract_object_without_the_reference(monkeypatch):
    obj = Outer(
        name="n", inner=Inner(zeta=3, alpha="é"), items=(1, 2), colour=Colour.DARK_RED, nothing=None
    )
    expected = _reference(obj)

    def not_used(*_args):
        raise AssertionError("the reference encoder ran")

    monkeypatch.setattr(_canonical, "_emit", not_used)
    assert ("bytes", canonical_json(obj)) == expected


@attrs.frozen
class Nest:
    inner: Inner
    rows: tuple[Inner, ...]


@given(
    st.builds(
        Nest,
        inner=st.builds(Inner, zeta=st.integers(-1, 3), alpha=_any_text) | _scalar,
        rows=st.lists(
            st.builds(Inner, zeta=st.integers(0, 3), alpha=_any_text) | _scalar, max_size=3
        ).map(tuple)
        | _scalar,
    )
)
def test_nested_objects_and_rows_of_objects_agree_with_the_reference(obj):
    assert _fast(obj) == _reference(obj)
