"""Recovery envelopes: what a client may safely do after a rejected or uncertain request.

A :class:`TaskRecoveryEnvelope` binds the request and execution identities, the exact task
and attempt digests and the old fence, and reports one disposition:

* ``confirmed`` - at least one confirmed effect, no unresolved effect; inspect or stop only;
* ``conclusive_rejection`` - the request had no effect (no confirmed, no unresolved effect);
  inspect or stop in every observed state, and an identical retry only when ``pending``;
* ``uncertain_effect`` - at least one unresolved effect; never an identical retry.

``observed_state`` describes the existing attempt, not an effect of the request. Fence
supersession records the old and a strictly greater new fence; expiry alone never implies it.
``prepare_fresh_attempt`` is permitted only for ``replaced`` with confirmed supersession and
``execution_may_still_run`` as the only unresolved effect. The envelope has no command,
credential or path field. :func:`permitted_actions` is the table; envelopes must match it.

>>> permitted_actions(Disposition.CONCLUSIVE_REJECTION, ObservedState.PENDING, (), False)
('inspect', 'stop', 'retry_identical')
>>> permitted_actions(Disposition.UNCERTAIN_EFFECT, ObservedState.REPLACED,
...                   (UnresolvedEffect.EXECUTION_MAY_STILL_RUN,), True)
('inspect', 'stop', 'reconcile', 'prepare_fresh_attempt')
"""

from __future__ import annotations

import enum

import attrs

from taskcore.codec import wire_field
from taskcore.contract.common import digest_field, id_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import RECOVERY_ITEMS_MAX

__all__ = [
    "ConfirmedEffect",
    "Disposition",
    "FenceSupersession",
    "ObservedState",
    "RecoveryAction",
    "TaskRecoveryEnvelope",
    "UnresolvedEffect",
    "permitted_actions",
]


class Disposition(enum.Enum):
    """The recovery disposition of one request."""

    CONFIRMED = "confirmed"
    CONCLUSIVE_REJECTION = "conclusive_rejection"
    UNCERTAIN_EFFECT = "uncertain_effect"


class ObservedState(enum.Enum):
    """The state of the existing attempt, observed independently of the request."""

    PENDING = "pending"
    LEASED = "leased"
    EXPIRED = "expired"
    FINISHED = "finished"
    REPLACED = "replaced"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"


class ConfirmedEffect(enum.Enum):
    """An effect known to have happened."""

    ATTEMPT_CLAIMED = "attempt_claimed"
    LEASE_RENEWED = "lease_renewed"
    ATTEMPT_CANCELLED = "attempt_cancelled"
    FENCE_SUPERSEDED = "fence_superseded"
    ASSERTION_RETAINED = "assertion_retained"


class UnresolvedEffect(enum.Enum):
    """An effect that may or may not have happened; each blocks identical retry."""

    EXECUTION_MAY_STILL_RUN = "execution_may_still_run"
    RESULT_ACCEPTANCE_UNKNOWN = "result_acceptance_unknown"
    RESOURCE_CUSTODY = "resource_custody"
    EXTERNAL_EFFECT = "external_effect"


class RecoveryAction(enum.Enum):
    """What the client may do next. None of these is a command the server runs."""

    INSPECT = "inspect"
    STOP = "stop"
    RECONCILE = "reconcile"
    RETRY_IDENTICAL = "retry_identical"
    PREPARE_FRESH_ATTEMPT = "prepare_fresh_attempt"


@attrs.frozen(kw_only=True)
class FenceSupersession:
    """An explicit supersession: the old fence and a strictly greater new one."""

    old_fence: int = wire_field(lo=1)
    new_fence: int = wire_field(lo=2)

    def __attrs_post_init__(self) -> None:
        if self.new_fence <= self.old_fence:
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "new_fence must be strictly greater than old_fence",
                path="$.new_fence",
            )


def permitted_actions(
    disposition: Disposition,
    observed_state: ObservedState,
    unresolved: tuple[UnresolvedEffect, ...],
    supersession_confirmed: bool,
) -> tuple[str, ...]:
    """Return the permitted actions (wire spellings, in canonical order) for an envelope."""
    actions = [RecoveryAction.INSPECT, RecoveryAction.STOP]
    if disposition is Disposition.CONCLUSIVE_REJECTION and observed_state is ObservedState.PENDING:
        actions.append(RecoveryAction.RETRY_IDENTICAL)
    if disposition is Disposition.UNCERTAIN_EFFECT:
        actions.append(RecoveryAction.RECONCILE)
        if (
            observed_state is ObservedState.REPLACED
            and supersession_confirmed
            and tuple(unresolved) == (UnresolvedEffect.EXECUTION_MAY_STILL_RUN,)
        ):
            actions.append(RecoveryAction.PREPARE_FRESH_ATTEMPT)
    return tuple(a.value for a in actions)


@attrs.frozen(kw_only=True)
class TaskRecoveryEnvelope:
    """The recovery view of one request against one attempt at its old fence."""

    version: int = wire_field(version=True)
    request_id: str = id_field()
    execution_operation_id: str = id_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    fence: int = wire_field(lo=1)
    disposition: Disposition = wire_field()
    observed_state: ObservedState = wire_field()
    confirmed_effects: tuple[ConfirmedEffect, ...] = wire_field(max_len=RECOVERY_ITEMS_MAX)
    unresolved_effects: tuple[UnresolvedEffect, ...] = wire_field(max_len=RECOVERY_ITEMS_MAX)
    fence_supersession: FenceSupersession | None = wire_field()
    permitted_actions: tuple[RecoveryAction, ...] = wire_field(max_len=RECOVERY_ITEMS_MAX)

    def __attrs_post_init__(self) -> None:
        d = self.disposition
        if len(set(self.confirmed_effects)) != len(self.confirmed_effects) or len(
            set(self.unresolved_effects)
        ) != len(self.unresolved_effects):
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "effects are listed once each",
                path="$.confirmed_effects",
            )
        if d is Disposition.CONFIRMED and (not self.confirmed_effects or self.unresolved_effects):
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "confirmed needs a confirmed effect and no unresolved effect",
                path="$.disposition",
            )
        if d is Disposition.CONCLUSIVE_REJECTION and (
            self.confirmed_effects or self.unresolved_effects
        ):
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "a conclusive rejection had no confirmed or unresolved effect",
                path="$.disposition",
            )
        if d is Disposition.UNCERTAIN_EFFECT and not self.unresolved_effects:
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "uncertain_effect needs at least one unresolved effect",
                path="$.unresolved_effects",
            )
        if (
            ConfirmedEffect.ASSERTION_RETAINED in self.confirmed_effects
            and self.observed_state is not ObservedState.FINISHED
        ):
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "a confirmed retained assertion requires a finished attempt",
                path="$.observed_state",
            )
        sup = self.fence_supersession
        if (sup is not None) != (self.observed_state is ObservedState.REPLACED):
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "fence supersession is recorded exactly for a replaced attempt",
                path="$.fence_supersession",
            )
        if ConfirmedEffect.FENCE_SUPERSEDED in self.confirmed_effects and sup is None:
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "a confirmed fence supersession records its old and new fence",
                path="$.fence_supersession",
            )
        if sup is not None and sup.old_fence != self.fence:
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                "fence supersession must start at the envelope's fence",
                path="$.fence_supersession.old_fence",
            )
        expected = permitted_actions(
            d, self.observed_state, self.unresolved_effects, sup is not None
        )
        if tuple(a.value for a in self.permitted_actions) != expected:
            raise TaskError(
                ErrorCode.INVALID_RECOVERY,
                f"permitted_actions must be exactly {list(expected)}",
                path="$.permitted_actions",
            )

    @classmethod
    def build(
        cls,
        *,
        request_id: str,
        execution_operation_id: str,
        task_id: str,
        task_digest: str,
        attempt_id: str,
        attempt_digest: str,
        fence: int,
        disposition: Disposition,
        observed_state: ObservedState,
        confirmed_effects: tuple[ConfirmedEffect, ...] = (),
        unresolved_effects: tuple[UnresolvedEffect, ...] = (),
        fence_supersession: FenceSupersession | None = None,
    ) -> TaskRecoveryEnvelope:
        """Build an envelope with its permitted actions computed from the table."""
        actions = permitted_actions(
            disposition, observed_state, unresolved_effects, fence_supersession is not None
        )
        return cls(
            version=1,
            request_id=request_id,
            execution_operation_id=execution_operation_id,
            task_id=task_id,
            task_digest=task_digest,
            attempt_id=attempt_id,
            attempt_digest=attempt_digest,
            fence=fence,
            disposition=disposition,
            observed_state=observed_state,
            confirmed_effects=confirmed_effects,
            unresolved_effects=unresolved_effects,
            fence_supersession=fence_supersession,
            permitted_actions=tuple(RecoveryAction(a) for a in actions),
        )
