"""OAuth scopes and what they allow: the one table from scopes to tiers and autonomy.

A token's scopes cap what it may do; the grant (what a person consented to) caps it again.
The actor an access token authenticates as has the lower of the two, in tier and in
autonomy. Autonomy scopes follow the risk classes of :class:`~taskcore.actors.RiskClass`;
tier scopes lift the tier above ``agent``.

=========================  ==========================================================
scope                      allows
=========================  ==========================================================
``agent-task:read``        autonomy 0: read-only operations
``agent-task:write``       autonomy 1: write operations (claim, checkpoint, result ...)
``agent-task:sensitive``   autonomy 2: sensitive operations
``agent-task:destructive`` autonomy 3: destructive operations
``agent-task:member``      the member tier (repository reads, ...)
``agent-task:admin``       the admin tier
=========================  ==========================================================

A request without a scope asks for :data:`DEFAULT_SCOPES`.

>>> cap(("agent-task:read", "agent-task:write"))
(<Tier.AGENT: 1>, 1)
>>> scopes_for(Tier.MEMBER, 2)
('agent-task:read', 'agent-task:write', 'agent-task:sensitive', 'agent-task:member')
>>> cap(()) is None
True
"""

from __future__ import annotations

from collections.abc import Iterable

from taskcore.actors import RiskClass, Tier

__all__ = [
    "AUTONOMY_SCOPES",
    "DEFAULT_SCOPES",
    "SCOPES_SUPPORTED",
    "TIER_SCOPES",
    "cap",
    "required_scopes",
    "scopes_for",
    "split_scope",
]

AUTONOMY_SCOPES: tuple[str, ...] = tuple(f"agent-task:{risk.value}" for risk in RiskClass)
"""Index = the autonomy level the scope allows (``read`` 0 .. ``destructive`` 3)."""

TIER_SCOPES: dict[str, Tier] = {"agent-task:member": Tier.MEMBER, "agent-task:admin": Tier.ADMIN}
"""Scopes that lift the tier above ``agent``."""

SCOPES_SUPPORTED: tuple[str, ...] = AUTONOMY_SCOPES + tuple(TIER_SCOPES)
"""Every scope, as the metadata documents list them."""

DEFAULT_SCOPES: tuple[str, ...] = ("agent-task:read", "agent-task:write")
"""What a request without a ``scope`` asks for: an agent that takes and finishes work."""


def split_scope(scope: str | None) -> tuple[str, ...]:
    """The scopes of a space-separated ``scope`` value, sorted the table's way, no repeats.

    >>> split_scope("agent-task:write  agent-task:read agent-task:write")
    ('agent-task:read', 'agent-task:write')
    """
    seen = {s for s in (scope or "").split(" ") if s}
    known = [s for s in SCOPES_SUPPORTED if s in seen]
    return tuple(known + sorted(seen - set(known)))


def cap(scopes: Iterable[str]) -> tuple[Tier, int] | None:
    """The highest tier and autonomy ``scopes`` allow; ``None`` when they allow nothing."""
    given = set(scopes)
    levels = [level for level, name in enumerate(AUTONOMY_SCOPES) if name in given]
    if not levels:
        return None
    tier = max((TIER_SCOPES[s] for s in given if s in TIER_SCOPES), default=Tier.AGENT)
    return tier, max(levels)


def scopes_for(tier: Tier, autonomy: int) -> tuple[str, ...]:
    """The scopes that allow exactly ``tier`` and ``autonomy`` (what a token says it has)."""
    tiers = tuple(name for name, t in TIER_SCOPES.items() if t <= tier)
    return AUTONOMY_SCOPES[: autonomy + 1] + tiers


def required_scopes(min_tier: Tier, risk: RiskClass) -> tuple[str, ...]:
    """The scopes an operation of ``min_tier`` and ``risk`` needs (the step-up challenge).

    >>> required_scopes(Tier.MEMBER, RiskClass.READ)
    ('agent-task:read', 'agent-task:member')
    """
    return scopes_for(min_tier, risk.min_autonomy)
