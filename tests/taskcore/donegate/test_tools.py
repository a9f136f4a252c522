"""The tool table: one simple command's kind and writes."""

from __future__ import annotations

import pytest
from taskcore.donegate.tools import Kind, classify


@pytest.mark.parametrize(
    ("words", "kind"),
    [
        (["pytest", "-q"], Kind.TEST),
        (["cargo", "build"], Kind.BUILD),
        (["ruff", "check", "."], Kind.LINT),
        (["git", "commit", "-m", "x"], Kind.COMMIT),
        (["git", "push"], Kind.PUSH),
        (["gh", "run", "watch", "--exit-status"], Kind.CI_WATCH),
        (["gh", "run", "watch"], None),
        (["pytest", "--help"], None),
        (["git", "status"], None),
        (["cd", "src"], None),
    ],
)
def test_tools_are_classified_by_name_and_subcommand(words, kind):
    assert classify(words)[0] is kind


def test_a_formatter_writes_unless_it_only_checks():
    assert classify(["ruff", "format", "src"]) == (None, ["(formatter)"], None)
    assert classify(["ruff", "format", "--check", "src"]) == (Kind.LINT, [], None)


def test_file_writers_name_what_they_write_and_shells_hand_back_their_script():
    assert classify(["sed", "-i", "s/a/b/", "x.py"])[1] == ["x.py"]
    assert classify(["bash", "-c", "pytest"]) == (None, [], "pytest")


def test_checks_and_ships():
    assert Kind.TEST.is_check
    assert not Kind.TEST.is_ship
    assert Kind.DEPLOY.is_ship
    assert not Kind.COMMIT.is_check
