"""Operator acts on the authority: the domain functions behind the ``operator.*`` operations.

Registering a repository (with its local path), registering a profile, installing a
requirement, changing policy, enrolling an executor's public key and revoking it are acts of
the operator on the machine that holds the data dir. They are reached through the operator
surface (:mod:`taskcore.operator_ops`: local doors only, so no request body from the network
can ever name a filesystem path), which runs each in the call's transaction (``storage`` is
then joined to it) and audits it once, refusals included (``actor="operator"``). These
functions write no audit event of their own.

>>> import tempfile, subprocess, pathlib
>>> from taskcore.clock import FakeClock
>>> from taskcore.store import open_storage
>>> tree = pathlib.Path(tempfile.mkdtemp())
>>> _ = subprocess.run(["git", "init", "-q", str(tree)], check=True)
>>> storage = open_storage(tempfile.mkdtemp(), create=True)
>>> register_repository(storage, FakeClock(), workspace="acme", repository_id="widgets",
...     work_tree=tree).policy_epoch
1
>>> storage.close()
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from taskcore.authority import gitrev
from taskcore.authority.requirement import (
    DEFAULT_POLICY,
    RepositoryPolicy,
    WorkflowRequirement,
    compile_requirement,
    policy_digest,
)
from taskcore.canonical import canonical_json
from taskcore.clock import Clock
from taskcore.contract import ExecutorEnrollment, ExecutorRevocation
from taskcore.contract.common import ID, REPOSITORY_ID
from taskcore.contract.task import TARGET_PATTERN
from taskcore.digest import is_hex64
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.withdrawal import withdraw_published
from taskcore.limits import REASON_MAX_CHARS
from taskcore.store.authority_api import (
    PolicyRecord,
    ProfileRecord,
    RepositoryRecord,
    RequirementRecord,
)
from taskcore.store.storage import Storage, Transaction

__all__ = [
    "OPERATOR",
    "InstalledRequirement",
    "enroll_executor",
    "install_requirement",
    "register_profile",
    "register_repository",
    "revoke_executor",
    "set_policy",
]

OPERATOR = "operator"
"""The actor name operator acts are audited under."""

_ID = re.compile(ID)
_REPOSITORY = re.compile(REPOSITORY_ID)
_WORKSPACE = re.compile(r"[A-Za-z0-9._-]{1,128}")
_TARGET = re.compile(TARGET_PATTERN)


def _check_id(value: str, what: str) -> None:
    if not isinstance(value, str) or _ID.fullmatch(value) is None:
        raise TaskError(ErrorCode.INVALID_VALUE, f"{what} must match {ID}")


def _repository(tx: Transaction, repository_id: str) -> RepositoryRecord:
    record = tx.authority.get_repository(repository_id)
    if record is None:
        raise TaskError(ErrorCode.NOT_FOUND, f"no repository {repository_id!r} is registered")
    return record


def register_repository(
    storage: Storage, clock: Clock, *, workspace: str, repository_id: str, work_tree: Path | str
) -> RepositoryRecord:
    """Register the git work tree at ``work_tree`` as ``repository_id`` of ``workspace``.

    The path must be absolute, the top level of a git work tree and not a symlink; it is
    stored resolved. The repository starts at policy epoch 1 with the default policy.
    """
    if not isinstance(repository_id, str) or _REPOSITORY.fullmatch(repository_id) is None:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "repository_id must be one identifier or OWNER/NAME, each part matching "
            f"{ID} and not '.' or '..'",
        )
    if _WORKSPACE.fullmatch(workspace) is None:
        raise TaskError(ErrorCode.INVALID_VALUE, "workspace must match [A-Za-z0-9._-]{1,128}")
    path = Path(work_tree)
    if not path.is_absolute():
        raise TaskError(ErrorCode.INVALID_PATH, "register the repository by its absolute path")
    if path.is_symlink():
        raise TaskError(ErrorCode.INVALID_PATH, "the repository path must not be a symlink")
    if not gitrev.is_git_work_tree(path):
        raise TaskError(ErrorCode.INVALID_PATH, "the path is not the top level of a git work tree")
    now = clock.now_ms()
    policy_bytes = canonical_json(DEFAULT_POLICY)
    digest = policy_digest(DEFAULT_POLICY)
    record = RepositoryRecord(
        repository_id=repository_id,
        workspace=workspace,
        work_tree=str(path.resolve()),
        registered_at_ms=now,
        policy_epoch=1,
        policy_digest=digest,
    )
    with storage.write() as tx:
        tx.authority.insert_repository(record)
        tx.authority.insert_policy(
            PolicyRecord(
                repository_id=repository_id,
                epoch=1,
                digest=digest,
                body=policy_bytes,
                recorded_at_ms=now,
            )
        )
    return record


def set_policy(
    storage: Storage, clock: Clock, *, repository_id: str, policy: RepositoryPolicy
) -> int:
    """Record ``policy`` as the repository's next policy epoch; return the current epoch.

    An identical policy records nothing. A new epoch makes every earlier subject stale.
    """
    body = canonical_json(policy)
    digest = policy_digest(policy)
    with storage.write() as tx:
        repository = _repository(tx, repository_id)
        if repository.policy_digest == digest:
            return repository.policy_epoch
        epoch = repository.policy_epoch + 1
        tx.authority.insert_policy(
            PolicyRecord(
                repository_id=repository_id,
                epoch=epoch,
                digest=digest,
                body=body,
                recorded_at_ms=clock.now_ms(),
            )
        )
        return epoch


@attrs.frozen(kw_only=True)
class InstalledRequirement:
    """The digests of an installed requirement; ``created`` is false for a re-install."""

    requirement_digest: str
    plan_digest: str
    created: bool


def install_requirement(
    storage: Storage, clock: Clock, *, repository_id: str, requirement: WorkflowRequirement
) -> InstalledRequirement:
    """Compile and install ``requirement`` for a repository (content-addressed, immutable)."""
    plan = compile_requirement(requirement)
    body = canonical_json(requirement)
    with storage.write() as tx:
        _repository(tx, repository_id)
        created = tx.authority.insert_requirement(
            RequirementRecord(
                repository_id=repository_id,
                requirement_digest=plan.requirement_digest,
                requirement_id=requirement.requirement_id,
                body=body,
                plan_digest=plan.digest,
                installed_at_ms=clock.now_ms(),
            )
        )
    return InstalledRequirement(
        requirement_digest=plan.requirement_digest, plan_digest=plan.digest, created=created
    )


def register_profile(
    storage: Storage,
    clock: Clock,
    *,
    repository_id: str,
    profile_id: str,
    target: str,
    requirement_digest: str,
) -> ProfileRecord:
    """Register (or re-register) a task profile pinning a target and an installed requirement.

    Re-registering with the same values changes nothing; with another target or requirement
    it is the profile's next generation, and earlier subjects of the profile become stale.
    """
    _check_id(profile_id, "profile_id")
    if not isinstance(target, str) or _TARGET.fullmatch(target) is None:
        raise TaskError(ErrorCode.INVALID_VALUE, f"target must match {TARGET_PATTERN}")
    if not is_hex64(requirement_digest):
        raise TaskError(ErrorCode.INVALID_VALUE, "requirement_digest must be 64 lowercase hex")
    with storage.write() as tx:
        _repository(tx, repository_id)
        if tx.authority.get_requirement(repository_id, requirement_digest) is None:
            raise TaskError(
                ErrorCode.NOT_FOUND, "install the requirement before registering a profile for it"
            )
        old = tx.authority.get_profile(repository_id, profile_id)
        if old is not None and (old.target, old.requirement_digest) == (target, requirement_digest):
            return old
        record = ProfileRecord(
            repository_id=repository_id,
            profile_id=profile_id,
            target=target,
            requirement_digest=requirement_digest,
            generation=1 if old is None else old.generation + 1,
            registered_at_ms=clock.now_ms(),
        )
        tx.authority.put_profile(record)
        return record


def enroll_executor(
    storage: Storage,
    clock: Clock,
    *,
    registration_id: str,
    executor_id: str,
    repository_id: str,
    step_id: str,
    verification_key_id: str,
    public_key: str,
) -> ExecutorEnrollment:
    """Enroll an operator-supplied Ed25519 public key as the registration's next epoch.

    The first enrollment of a registration is epoch 1. Re-enrollment keeps the executor,
    repository and step of the registration (a different scope is a new registration) and
    makes every earlier epoch non-current. No key is generated here.
    """
    for value, what in (
        (registration_id, "registration_id"),
        (executor_id, "executor_id"),
        (step_id, "step_id"),
        (verification_key_id, "verification_key_id"),
    ):
        _check_id(value, what)
    if not is_hex64(public_key):
        raise TaskError(
            ErrorCode.INVALID_VALUE, "public_key must be an Ed25519 public key as 64 lowercase hex"
        )
    with storage.write() as tx:
        _repository(tx, repository_id)
        epochs = tx.authority.enrollments(registration_id)
        if epochs:
            first = epochs[0]
            if (first.executor_id, first.repository_id, first.step_id) != (
                executor_id,
                repository_id,
                step_id,
            ):
                raise TaskError(
                    ErrorCode.CONFLICT,
                    "a registration keeps its executor, repository and step; enroll a new "
                    "registration_id for another scope",
                )
        enrollment = ExecutorEnrollment(
            version=1,
            registration_id=registration_id,
            executor_id=executor_id,
            repository_id=repository_id,
            step_id=step_id,
            registration_epoch=(epochs[-1].registration_epoch + 1) if epochs else 1,
            verification_key_id=verification_key_id,
            public_key=public_key,
            enrolled_at_ms=clock.now_ms(),
        )
        tx.authority.insert_enrollment(enrollment)
        if epochs:  # re-enrollment: the older epochs' receipts stop counting
            withdraw_published(tx, clock.now_ms(), repository_id)
        return enrollment


def revoke_executor(
    storage: Storage,
    clock: Clock,
    *,
    registration_id: str,
    reason: str,
    registration_epoch: int | None = None,
) -> ExecutorRevocation:
    """Revoke one epoch of a registration (the newest when ``registration_epoch`` is None).

    Revocation invalidates observations of that epoch even when they were retained earlier.
    """
    if not reason or len(reason) > REASON_MAX_CHARS:
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"give a reason of 1..{REASON_MAX_CHARS} characters"
        )
    with storage.write() as tx:
        epochs = tx.authority.enrollments(registration_id)
        if not epochs:
            raise TaskError(ErrorCode.NOT_FOUND, f"no registration {registration_id!r}")
        wanted = epochs[-1].registration_epoch if registration_epoch is None else registration_epoch
        chosen = [e for e in epochs if e.registration_epoch == wanted]
        if not chosen:
            raise TaskError(
                ErrorCode.NOT_FOUND, f"registration {registration_id!r} has no epoch {wanted}"
            )
        enrollment = chosen[0]
        revocation = ExecutorRevocation(
            version=1,
            registration_id=registration_id,
            executor_id=enrollment.executor_id,
            registration_epoch=wanted,
            verification_key_id=enrollment.verification_key_id,
            revoked_at_ms=clock.now_ms(),
            reason=reason,
        )
        tx.authority.insert_revocation(revocation)
        _repository(tx, enrollment.repository_id)
        withdraw_published(tx, clock.now_ms(), enrollment.repository_id)
        return revocation
