"""Firing rates by adapter, repository and kind, each with n."""

from __future__ import annotations

from taskcore.donegate.config import GateConfig
from taskcore.donegate.index import GateIndex
from taskcore.donegate.stats import firing_rates, render_table


def test_firing_rates_over_the_fixture_index(roots: GateConfig) -> None:
    index = GateIndex(roots)
    index.scan()
    sessions = index.sessions()
    index.close()
    by_adapter = {r.group: r for r in firing_rates(sessions, by="adapter")}
    claude, codex = by_adapter["claude-code"], by_adapter["codex"]
    assert (claude.n, codex.n) == (20, 8)
    assert claude.done_claimed == 1
    assert codex.done_claimed == 0
    assert codex.below == codex.artifact_changed == 5
    assert claude.under_floor is False
    assert codex.under_floor is True
    by_kind = {r.group: r for r in firing_rates(sessions, by="kind")}
    assert by_kind["subagent"].n == 2
    assert by_kind["subagent"].below == 1
    table = render_table(firing_rates(sessions, by="repository"), "repository")
    assert "/home/dev/src/acme-web" in table
    assert "5 of 8 (n<20)" in table


def test_empty_index_says_so() -> None:
    assert "no session" in render_table([], "adapter")
