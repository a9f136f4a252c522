"""What a classified command is evidence of: checks lift to verified, ships to shipped."""

from __future__ import annotations

from taskcore.donegate import tools
from taskcore.donegate.kinds import Kind


def test_checks_and_ships_are_disjoint_and_commit_is_neither():
    checks = {k for k in Kind if k.is_check}
    ships = {k for k in Kind if k.is_ship}
    assert checks == {Kind.TEST, Kind.BUILD, Kind.LINT, Kind.CI_WATCH}
    assert ships == {Kind.PUSH, Kind.DEPLOY}
    assert set(Kind) - checks - ships == {Kind.COMMIT}


def test_the_tool_table_classifies_with_the_same_enumeration():
    assert tools.Kind is Kind
    assert tools.classify(["git", "commit", "-m", "x"])[0] is Kind.COMMIT
