"""The scope table: what a set of scopes allows, and the scopes of a tier and autonomy."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from taskcore.actors import MAX_AUTONOMY, RiskClass, Tier
from taskcore.scopes import (
    AUTONOMY_SCOPES,
    SCOPES_SUPPORTED,
    cap,
    required_scopes,
    scopes_for,
    split_scope,
)

tiers = st.sampled_from(list(Tier))
levels = st.integers(min_value=0, max_value=MAX_AUTONOMY)
scope_sets = st.lists(st.sampled_from([*SCOPES_SUPPORTED, "other:scope"]), max_size=8)


@given(tiers, levels)
def test_the_scopes_of_a_tier_and_autonomy_allow_exactly_that(tier, autonomy):
    assert cap(scopes_for(tier, autonomy)) == (tier, autonomy)


@given(scope_sets)
def test_split_scope_is_order_free_and_idempotent(scopes):
    once = split_scope(" ".join(scopes))
    assert split_scope(" ".join(reversed(scopes))) == once
    assert split_scope(" ".join(once)) == once


@given(scope_sets, scope_sets)
def test_more_scopes_never_allow_less(first, second):
    smaller, larger = cap(first), cap(first + second)
    if smaller is not None:
        assert larger is not None
        assert larger[0] >= smaller[0]
        assert larger[1] >= smaller[1]


@given(tiers, st.sampled_from(list(RiskClass)), tiers, levels)
def test_an_operation_is_reachable_exactly_when_its_required_scopes_are_held(
    min_tier, risk, tier, autonomy
):
    held = set(scopes_for(tier, autonomy))
    reachable = tier >= min_tier and autonomy >= risk.min_autonomy
    assert reachable == (set(required_scopes(min_tier, risk)) <= held)


def test_scopes_without_an_autonomy_scope_allow_nothing():
    assert cap(["agent-task:admin", "agent-task:member"]) is None
    assert AUTONOMY_SCOPES[0] == "agent-task:read"
