"""Wrapper stripping: the command a simple command really runs."""

from __future__ import annotations

import pytest
from taskcore.donegate.unwrap import base, unwrap


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["FOO=1", "pytest"], (["pytest"], None)),
        (["timeout", "-s", "KILL", "60", "cargo", "test"], (["cargo", "test"], None)),
        (["uv", "run", "--frozen", "pytest"], (["pytest"], None)),
        (["python3", "-m", "pytest", "-x"], (["pytest", "-x"], None)),
        (["coverage", "run", "-m", "pytest"], (["python", "-m", "pytest"], None)),
        (["sh", "-c", "make lint"], ([], "make lint")),
        (["echo", "pytest"], (["echo", "pytest"], None)),
        (["env"], ([], None)),
    ],
)
def test_wrappers_are_peeled_off(words, expected):
    assert unwrap(words) == expected


def test_base_drops_the_directory_case_and_exe():
    assert base("/usr/bin/Python3") == "python3"
    assert base("C:/tools/cargo.EXE") == "cargo"
