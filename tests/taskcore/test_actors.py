import pytest
from taskcore.actors import MAX_AUTONOMY, Actor, RiskClass, Tier
from taskcore.errors import ErrorCode, TaskError


def test_tiers_are_ordered_agent_member_admin():
    assert Tier.AGENT < Tier.MEMBER < Tier.ADMIN


@pytest.mark.parametrize("tier", list(Tier))
def test_tier_wire_spelling_round_trips(tier):
    assert Tier.from_wire(tier.wire) is tier


def test_unknown_tier_is_invalid_value():
    with pytest.raises(TaskError) as info:
        Tier.from_wire("root")
    assert info.value.code is ErrorCode.INVALID_VALUE


def test_risk_classes_fix_increasing_minimum_autonomy():
    levels = [r.min_autonomy for r in RiskClass]
    assert levels == sorted(levels) == [0, 1, 2, 3]
    assert RiskClass.DESTRUCTIVE.min_autonomy == MAX_AUTONOMY


@pytest.mark.parametrize("autonomy", [-1, MAX_AUTONOMY + 1])
def test_actor_autonomy_outside_the_range_is_refused(autonomy):
    with pytest.raises(TaskError) as info:
        Actor(token_id="t", workspace="w", tier=Tier.AGENT, autonomy=autonomy)
    assert info.value.code is ErrorCode.OUT_OF_BOUNDS


def test_actor_identity_is_workspace_and_token():
    actor = Actor(token_id="tok", workspace="acme", tier=Tier.MEMBER)
    assert (actor.owner_id, actor.agent_id) == ("acme", "tok")
