"""The re-entry budget table."""

from __future__ import annotations

from taskcore.donegate.budget import Decision, decide
from taskcore.limits import DONE_GATE_BUDGET


def test_three_blocks_then_the_receipt_once_then_silence() -> None:
    used, shown, actions = 0, False, []
    for _ in range(DONE_GATE_BUDGET + 3):
        d = decide(below_line=True, used=used, shown=shown, stop_hook_active=False)
        used, shown = d.used, d.shown
        actions.append(d.action)
    assert actions == ["block"] * DONE_GATE_BUDGET + ["receipt", "silent", "silent"]


def test_above_the_line_is_always_silent_and_spends_nothing() -> None:
    assert decide(below_line=False, used=0, shown=False, stop_hook_active=False) == Decision(
        "silent", 0, False
    )


def test_stop_hook_active_is_honoured() -> None:
    assert decide(below_line=True, used=0, shown=False, stop_hook_active=True) == Decision(
        "silent", 0, False
    )
