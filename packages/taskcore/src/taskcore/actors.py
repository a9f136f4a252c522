"""Who is calling: tiers, autonomy, risk classes and the :class:`Actor`.

An actor is always derived from a credential (or constructed in-process by trusted code);
request JSON can never choose it.

>>> Tier.from_wire("member") >= Tier.AGENT
True
>>> RiskClass.SENSITIVE.min_autonomy
2
"""

from __future__ import annotations

import enum

import attrs

from taskcore.errors import ErrorCode, TaskError

__all__ = ["MAX_AUTONOMY", "Actor", "RiskClass", "Tier"]

MAX_AUTONOMY = 3
"""Autonomy levels run from 0 (read only) to 3 (may act destructively without a person)."""


class Tier(enum.IntEnum):
    """Caller permission tiers, ordered: an admin may do what a member may, and so on."""

    AGENT = 1
    MEMBER = 2
    ADMIN = 3

    @property
    def wire(self) -> str:
        """The lowercase spelling used in tokens and on the wire."""
        return self.name.lower()

    @classmethod
    def from_wire(cls, value: str) -> Tier:
        """Parse ``agent``, ``member`` or ``admin``."""
        try:
            return cls[value.upper()]
        except KeyError:
            raise TaskError(
                ErrorCode.INVALID_VALUE, f"tier {value!r} is not one of: agent, member, admin"
            ) from None


class RiskClass(enum.Enum):
    """How much an operation can change; each class fixes the minimum autonomy to call it."""

    READ = "read"
    WRITE = "write"
    SENSITIVE = "sensitive"
    DESTRUCTIVE = "destructive"

    @property
    def min_autonomy(self) -> int:
        """The smallest actor autonomy level allowed to call an operation of this class."""
        return _MIN_AUTONOMY[self._value_]


_MIN_AUTONOMY = {"read": 0, "write": 1, "sensitive": 2, "destructive": 3}


@attrs.frozen(kw_only=True)
class Actor:
    """An authenticated caller: token identity, workspace, tier and autonomy level."""

    token_id: str
    workspace: str
    tier: Tier
    autonomy: int = attrs.field(default=1)
    name: str = ""

    @autonomy.validator
    def _check_autonomy(self, _: attrs.Attribute[int], value: int) -> None:
        if not 0 <= value <= MAX_AUTONOMY:
            raise TaskError(
                ErrorCode.OUT_OF_BOUNDS, f"autonomy must be between 0 and {MAX_AUTONOMY}"
            )

    @property
    def owner_id(self) -> str:
        """The owner an idempotency scope and an attempt are bound to (the workspace)."""
        return self.workspace

    @property
    def agent_id(self) -> str:
        """The agent identity within the owner (the token)."""
        return self.token_id
