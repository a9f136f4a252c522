"""Executor enrollment and revocation (operator-supplied Ed25519 public keys).

An enrollment is an immutable, repository- and step-scoped epoch; re-enrollment is a new
epoch. :meth:`ExecutorEnrollment.validate_scope_and_binding` checks structure only and
:meth:`ExecutorRevocation.matches_binding` only compares identities: neither is admission.
The journal's current-registration lookup decides currency.

>>> enrollment = ExecutorEnrollment(version=1, registration_id="reg-1", executor_id="laptop-1",
...     repository_id="acme.widgets", step_id="tests", registration_epoch=1,
...     verification_key_id="k1", public_key="d7" * 32, enrolled_at_ms=0)
>>> enrollment.validate_scope_and_binding(repository_id="acme.widgets", step_id="tests",
...     binding=enrollment.binding)
>>> enrollment.validate_scope_and_binding(repository_id="acme.widgets", step_id="build",
...     binding=enrollment.binding)
Traceback (most recent call last):
taskcore.errors.TaskError: the executor is not enrolled for this step
>>> revocation = ExecutorRevocation(version=1, registration_id="reg-1", executor_id="laptop-1",
...     registration_epoch=1, verification_key_id="k1", revoked_at_ms=5, reason="laptop lost")
>>> revocation.matches_binding(enrollment.binding)
True
>>> revocation.matches_binding(attrs.evolve(enrollment, registration_epoch=2).binding)
False
"""

from __future__ import annotations

import attrs

from taskcore.codec import wire_field
from taskcore.contract.common import ExecutorBinding, digest_field, id_field, repository_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import REASON_MAX_CHARS

__all__ = ["ExecutorEnrollment", "ExecutorRevocation"]


@attrs.frozen(kw_only=True)
class ExecutorEnrollment:
    """One enrollment epoch: a public key for one executor, one repository and one step."""

    version: int = wire_field(version=True)
    registration_id: str = id_field()
    executor_id: str = id_field()
    repository_id: str = repository_field()
    step_id: str = id_field()
    registration_epoch: int = wire_field(lo=1)
    verification_key_id: str = id_field()
    public_key: str = digest_field()
    enrolled_at_ms: int = wire_field()

    @property
    def binding(self) -> ExecutorBinding:
        """The binding a result made under this enrollment carries."""
        return ExecutorBinding(
            registration_id=self.registration_id,
            executor_id=self.executor_id,
            registration_epoch=self.registration_epoch,
            verification_key_id=self.verification_key_id,
        )

    def validate_scope_and_binding(
        self, *, repository_id: str, step_id: str, binding: ExecutorBinding
    ) -> None:
        """Check structural scope (repository, step) and exact binding; not admission."""
        if self.repository_id != repository_id:
            raise TaskError(
                ErrorCode.EXECUTOR_NOT_ENROLLED, "the executor is not enrolled for this repository"
            )
        if self.step_id != step_id:
            raise TaskError(
                ErrorCode.EXECUTOR_NOT_ENROLLED, "the executor is not enrolled for this step"
            )
        if binding != self.binding:
            raise TaskError(
                ErrorCode.EXECUTOR_NOT_ENROLLED,
                "the executor binding does not match this enrollment epoch",
            )


@attrs.frozen(kw_only=True)
class ExecutorRevocation:
    """A revocation of one enrollment epoch; it invalidates evidence retained earlier too."""

    version: int = wire_field(version=True)
    registration_id: str = id_field()
    executor_id: str = id_field()
    registration_epoch: int = wire_field(lo=1)
    verification_key_id: str = id_field()
    revoked_at_ms: int = wire_field()
    reason: str = wire_field(min_len=1, max_len=REASON_MAX_CHARS)

    def matches_binding(self, binding: ExecutorBinding) -> bool:
        """Whether this revocation names exactly ``binding`` (identity comparison only)."""
        return (
            self.registration_id == binding.registration_id
            and self.executor_id == binding.executor_id
            and self.registration_epoch == binding.registration_epoch
            and self.verification_key_id == binding.verification_key_id
        )
