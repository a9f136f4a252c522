import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.contract import validate_reference_path
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import PATH_MAX_CHARS

from .strategies import reference_paths


@pytest.mark.parametrize(
    "good",
    [
        "a",
        "README.md",
        "docs/guide.md",
        "a/b/c/d.txt",
        ".hidden/x",
        "a/...",
        "with space/and-dash_under.score",
        "x" * PATH_MAX_CHARS,
    ],
)
def test_canonical_relative_paths_are_accepted(good):
    assert validate_reference_path(good) == good


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("", "empty path"),
        ("a//b", "empty component"),
        ("a/", "empty trailing component"),
        (".", "dot component"),
        ("a/./b", "dot component inside"),
        ("..", "dot-dot component"),
        ("a/../b", "dot-dot component inside"),
        ("a/..", "trailing dot-dot"),
        ("/etc/passwd", "leading slash"),
        ("a\\b", "backslash separator"),
        ("..\\x", "backslash traversal"),
        ("C:/Windows", "drive form"),
        ("c:", "bare drive"),
        ("file:x", "prefix form"),
        ("a/b:c", "colon inside a component"),
        ("a\x00b", "NUL"),
        ("a\x01b", "SOH"),
        ("a\tb", "tab"),
        ("a\nb", "newline"),
        ("a\x1fb", "unit separator"),
        ("a\x7fb", "DEL"),
        ("é", "non-ASCII"),
        ("docs/\u2028", "line separator"),
        ("x" * (PATH_MAX_CHARS + 1), "too long"),
    ],
)
def test_every_forbidden_path_form_is_invalid_path(bad, why):
    with pytest.raises(TaskError) as info:
        validate_reference_path(bad, path="$.references[0].path")
    assert info.value.code is ErrorCode.INVALID_PATH, why
    assert info.value.path == "$.references[0].path"


@given(reference_paths())
def test_generated_canonical_paths_are_accepted(path):
    assert validate_reference_path(path) == path


FORBIDDEN_CHARS = st.sampled_from(
    ["\\", ":", "\x00", "\x7f", *map(chr, range(0x01, 0x20)), "é", "\u2028", "😀"]
)


@given(reference_paths(), FORBIDDEN_CHARS, st.data())
def test_any_forbidden_character_anywhere_is_refused(path, ch, data):
    at = data.draw(st.integers(0, len(path)))
    with pytest.raises(TaskError) as info:
        validate_reference_path(path[:at] + ch + path[at:])
    assert info.value.code is ErrorCode.INVALID_PATH


@given(reference_paths(), st.sampled_from(["", ".", ".."]), st.data())
def test_an_empty_dot_or_dot_dot_component_anywhere_is_refused(path, component, data):
    parts = path.split("/")
    at = data.draw(st.integers(0, len(parts)))
    parts.insert(at, component)
    with pytest.raises(TaskError) as info:
        validate_reference_path("/".join(parts))
    assert info.value.code is ErrorCode.INVALID_PATH


@given(reference_paths())
def test_a_leading_slash_is_refused(path):
    with pytest.raises(TaskError) as info:
        validate_reference_path("/" + path)
    assert info.value.code is ErrorCode.INVALID_PATH
