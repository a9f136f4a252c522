"""The one CI rule (tests/ci.py)."""

import pytest

from tests.ci import in_ci, skip_or_fail


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("", False),
        ("0", False),
        ("false", False),
        ("False", False),
        (" no ", False),
        ("1", True),
        ("true", True),
        ("yes", True),
        ("anything", True),
    ],
)
def test_ci_is_set_and_not_a_spelling_of_false(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def test_a_missing_prerequisite_skips_locally_and_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "0")
    with pytest.raises(pytest.skip.Exception, match="no widget"):
        skip_or_fail("no widget")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI runs this test, but: no widget"):
        skip_or_fail("no widget")
