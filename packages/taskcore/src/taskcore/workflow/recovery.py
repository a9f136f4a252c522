"""The recovery projection: what is known about one mutation request, as an envelope.

Pure: it takes the retained idempotency row (if the request committed), the attempt the
request concerns and the time, and returns a :class:`~taskcore.contract.TaskRecoveryEnvelope`.
The table:

* the request committed (its ID is bound): its effect is confirmed (``attempt_claimed``,
  ``lease_renewed``, ``attempt_cancelled``, ``fence_superseded`` or ``assertion_retained``);
  when the attempt is now expired, cancelled or replaced, execution may still be running
  and nobody knows (``execution_may_still_run`` is unresolved), so the disposition is
  ``uncertain_effect``; otherwise ``confirmed``;
* the request did not commit: ``conclusive_rejection`` (it had no effect) with the attempt's
  observed state, which describes the attempt and not the request.

``observed_state`` is read at the given time (``expired`` is an observation, never proof of
termination). A replaced attempt always carries its recorded supersession (old and strictly
greater fence); ``prepare_fresh_attempt`` therefore appears exactly for a replaced attempt
whose only unresolved effect is that the old execution may still run. This journal knows
whether it accepted a result, so it never reports ``result_acceptance_unknown``; collector
uploads may.
"""

from __future__ import annotations

from typing import Final

from taskcore.contract import (
    ConfirmedEffect,
    Disposition,
    FenceSupersession,
    ObservedState,
    TaskRecoveryEnvelope,
    UnresolvedEffect,
)
from taskcore.store.journal_api import AttemptRecord, RequestRecord
from taskcore.workflow.states import AttemptState, observe_attempt

__all__ = ["CONFIRMED_EFFECT", "project_recovery"]

CONFIRMED_EFFECT: Final = {
    "claim": ConfirmedEffect.ATTEMPT_CLAIMED,
    "heartbeat": ConfirmedEffect.LEASE_RENEWED,
    "cancel": ConfirmedEffect.ATTEMPT_CANCELLED,
    "reconcile": ConfirmedEffect.FENCE_SUPERSEDED,
    "result": ConfirmedEffect.ASSERTION_RETAINED,
}
"""The effect a committed request of each kind is known to have had."""

_MAY_STILL_RUN: Final = frozenset(
    {ObservedState.EXPIRED, ObservedState.CANCELLED, ObservedState.REPLACED}
)


def project_recovery(
    *,
    kind: str,
    request_id: str,
    execution_operation_id: str,
    task_id: str,
    task_digest: str,
    attempt_id: str,
    attempt_digest: str,
    fence: int,
    retained: RequestRecord | None,
    attempt: AttemptRecord | None,
    now_ms: int,
) -> TaskRecoveryEnvelope:
    """Return the envelope for one request (see the module docstring for the table)."""
    if attempt is None:
        observed = ObservedState.UNKNOWN
        supersession = None
    else:
        observed = observe_attempt(AttemptState(attempt.state), attempt.lease_expires_at_ms, now_ms)
        supersession = (
            FenceSupersession(old_fence=attempt.fence, new_fence=attempt.superseded_by_fence)
            if observed is ObservedState.REPLACED and attempt.superseded_by_fence is not None
            else None
        )
    if retained is None:
        disposition = Disposition.CONCLUSIVE_REJECTION
        confirmed: tuple[ConfirmedEffect, ...] = ()
        unresolved: tuple[UnresolvedEffect, ...] = ()
    else:
        confirmed = (CONFIRMED_EFFECT[kind],)
        unresolved = (
            (UnresolvedEffect.EXECUTION_MAY_STILL_RUN,) if observed in _MAY_STILL_RUN else ()
        )
        disposition = Disposition.UNCERTAIN_EFFECT if unresolved else Disposition.CONFIRMED
    return TaskRecoveryEnvelope.build(
        request_id=request_id,
        execution_operation_id=execution_operation_id,
        task_id=task_id,
        task_digest=task_digest,
        attempt_id=attempt_id,
        attempt_digest=attempt_digest,
        fence=fence,
        disposition=disposition,
        observed_state=observed,
        confirmed_effects=confirmed,
        unresolved_effects=unresolved,
        fence_supersession=supersession,
    )
