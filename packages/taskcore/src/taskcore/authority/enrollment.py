"""Executor enrollment epochs, revocations and the current-registration lookup.

Enrollment retains an operator-supplied Ed25519 public key for one executor, one repository
and one step as an immutable *epoch* of a registration. Re-enrolling the same registration
records the next epoch (the key may change, the scope may not). Revocation names one epoch.
Nothing here generates a key or a credential.

:func:`current_registration` is the lookup every admission-like decision must call inside its
transaction: it loads the full binding and revocation state and accepts a binding only when
it names the registration's *newest* epoch, in scope, exactly, and unrevoked. A caller can
never establish currency with an epoch or revocation list of its own; an older epoch stays
invalid after re-enrollment and a revoked one is never rehabilitated.
"""

from __future__ import annotations

from taskcore.contract import ExecutorBinding, ExecutorEnrollment
from taskcore.errors import ErrorCode, TaskError
from taskcore.store.storage import Transaction

__all__ = ["current_registration", "registration_is_current"]


def current_registration(
    tx: Transaction, *, repository_id: str, step_id: str, binding: ExecutorBinding
) -> ExecutorEnrollment:
    """Return the enrollment ``binding`` names if it is current; raise otherwise.

    ``EXECUTOR_NOT_ENROLLED`` for an unknown registration or epoch, a scope or binding
    mismatch, or an epoch superseded by re-enrollment; ``EXECUTOR_REVOKED`` for a revoked one.
    """
    epochs = tx.authority.enrollments(binding.registration_id)
    chosen = [e for e in epochs if e.registration_epoch == binding.registration_epoch]
    if not chosen:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            "no such executor registration epoch; ask the operator to enroll the executor",
        )
    enrollment = chosen[0]
    enrollment.validate_scope_and_binding(
        repository_id=repository_id, step_id=step_id, binding=binding
    )
    for revocation in tx.authority.revocations(binding.registration_id):
        if revocation.matches_binding(binding):
            raise TaskError(
                ErrorCode.EXECUTOR_REVOKED,
                "this executor registration epoch was revoked; its evidence no longer counts",
            )
    newest = epochs[-1]
    if newest.registration_epoch != enrollment.registration_epoch:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            f"epoch {enrollment.registration_epoch} was superseded by re-enrollment (epoch "
            f"{newest.registration_epoch}); old evidence stays invalid",
        )
    return enrollment


def registration_is_current(
    tx: Transaction, *, repository_id: str, step_id: str, binding: ExecutorBinding
) -> bool:
    """Whether :func:`current_registration` accepts ``binding`` (for read-side projections)."""
    try:
        current_registration(tx, repository_id=repository_id, step_id=step_id, binding=binding)
    except TaskError as err:
        if err.code in (ErrorCode.EXECUTOR_NOT_ENROLLED, ErrorCode.EXECUTOR_REVOKED):
            return False
        raise
    return True
