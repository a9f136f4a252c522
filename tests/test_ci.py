"""The one CI rule (tests/ci.py)."""

import re
from pathlib import Path

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


ROOT = Path(__file__).resolve().parents[1]


def test_every_check_asks_the_one_rule():
    # No test module reads CI itself: tests/ci.py is the one place that decides.
    reading = re.compile(r"""environ(?:\.get)?\(\s*["']CI["']|environ\[\s*["']CI["']\s*\]""")
    readers = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("*.py")
        if reading.search(path.read_text(encoding="utf-8"))
    ]
    assert readers == ["tests/ci.py"]


def test_ci_run_cannot_be_thinned_by_the_environment():
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    first_test = next(i for i, line in enumerate(lines) if line.startswith("./dev test"))
    assert "export CI=1" in lines[:first_test]  # not ${CI:-1}: a pre-set CI=0 is overridden
    assert "unset AGENT_TASK_SKIP_HARNESS" in lines[:first_test]
    assert not any("${CI:-" in line for line in lines)
