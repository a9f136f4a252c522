"""Installing a collector profile: a trusted-local operator act, separate from enrollment.

Enrollment (:func:`taskcore.authority.enroll_executor`) only retains a public key; it grants
no receipt. An operator who wants that key's collector to count for a step installs a
:class:`~taskcore.contract.CollectorProfile` here, for one exact *current* registration
epoch, repository, workflow profile and step. Installing checks the step exists in the
workflow profile's installed plan with the ``collector`` progression and a matching action
class (``test``, ``build`` or ``lint`` for a command profile, ``review`` for finite review),
that the registration epoch is enrolled for that repository and step, current and not
revoked, and (for finite review) that the transport basis is qualified. Profiles are
immutable; installing another profile for the same scope supersedes the older one, which
never authorizes anything again. :func:`current_profile` and :func:`binding_of` are the
lookups every collector operation uses to find a step's current profile and its executor.

Like every operator act it is reached through the operator surface
(``operator.install_collector_profile``, local doors only), which audits it once.
"""

from __future__ import annotations

import json
from typing import Any

from taskcore.authority.enrollment import current_registration
from taskcore.authority.subjects import load_plan
from taskcore.canonical import canonical_json
from taskcore.clock import Clock
from taskcore.contract import (
    ActionClass,
    CollectorProfile,
    CommandCollectorProfile,
    ExecutorBinding,
    FiniteReviewCollectorProfile,
    WorkflowProgression,
    decode_collector_profile,
)
from taskcore.contract.collector import check_argv0
from taskcore.contract.collector_descriptor import collector_profile_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.withdrawal import withdraw_published
from taskcore.store.collector_api import CollectorProfileRecord
from taskcore.store.journal_api import TaskRecord
from taskcore.store.storage import Storage, Transaction

__all__ = [
    "COMMAND_ACTION_CLASSES",
    "binding_of",
    "current_profile",
    "install_collector_profile",
    "profile_of",
    "profile_scope_error",
]

COMMAND_ACTION_CLASSES = frozenset({ActionClass.TEST, ActionClass.BUILD, ActionClass.LINT})
"""Action classes a command collector profile may serve."""


def profile_scope_error(tx: Transaction, profile: CollectorProfile) -> TaskError | None:
    """Return why ``profile`` cannot authorize its step now, or ``None`` if it can.

    Checks the repository and workflow profile exist, the step is in the profile's installed
    plan with the collector progression and a matching action class, and the registration
    epoch is current for that repository and step (``current_registration``).
    """
    repository = tx.authority.get_repository(profile.repository_id)
    if repository is None:
        return TaskError(ErrorCode.NOT_FOUND, f"no repository {profile.repository_id!r}")
    workflow = tx.authority.get_profile(profile.repository_id, profile.workflow_profile_id)
    if workflow is None:
        return TaskError(
            ErrorCode.NOT_FOUND, f"no workflow profile {profile.workflow_profile_id!r}"
        )
    requirement = tx.authority.get_requirement(profile.repository_id, workflow.requirement_digest)
    if requirement is None:
        return TaskError(ErrorCode.INTEGRITY_FAILURE, "the profile's requirement is not installed")
    try:
        step = load_plan(requirement).step(profile.step_id).step
    except TaskError as err:
        return err
    if step.progression is not WorkflowProgression.COLLECTOR:
        return TaskError(
            ErrorCode.INVALID_VALUE,
            f"step {profile.step_id!r} progresses by {step.progression.value}, not by a collector",
        )
    if isinstance(profile, CommandCollectorProfile):
        if step.action_class not in COMMAND_ACTION_CLASSES:
            return TaskError(
                ErrorCode.INVALID_VALUE,
                f"a command collector cannot serve a {step.action_class.value} step",
            )
    elif step.action_class is not ActionClass.REVIEW:
        return TaskError(ErrorCode.INVALID_VALUE, "a finite-review collector serves review steps")
    epochs = [
        e
        for e in tx.authority.enrollments(profile.registration_id)
        if e.registration_epoch == profile.registration_epoch
    ]
    if not epochs:
        return TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            f"registration {profile.registration_id!r} has no epoch {profile.registration_epoch}",
        )
    try:
        current_registration(
            tx,
            repository_id=profile.repository_id,
            step_id=profile.step_id,
            binding=epochs[0].binding,
        )
    except TaskError as err:
        return err
    return None


def install_collector_profile(
    storage: Storage, clock: Clock, *, profile: CollectorProfile
) -> CollectorProfileRecord:
    """Install ``profile`` (immutable) for its scope; return the stored record.

    A finite-review profile is refused (``INVALID_VALUE``) after its own checks: the authority
    in this build issues no review descriptor and imports no review transfer, so a review
    step it served could be claimed but never collected, only reconciled. A command profile
    whose ``argv[0]`` is a relative path is refused (``INVALID_VALUE``,
    :func:`~taskcore.contract.collector.check_argv0`): it would name a file of the snapshot.
    """
    if isinstance(profile, CommandCollectorProfile):
        check_argv0(profile.recipe)
    if isinstance(profile, FiniteReviewCollectorProfile):
        profile.validate_for_installation()
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "finite-review collector profiles cannot be installed yet: this build does not "
            "import review transfers, so a review step's claim could only be reconciled. Serve "
            "the step with a command profile, or leave it without a collector",
        )
    digest = collector_profile_digest(profile)
    with storage.write() as tx:
        problem = profile_scope_error(tx, profile)
        if problem is not None:
            raise problem
        repository = tx.authority.get_repository(profile.repository_id)
        assert repository is not None
        record = CollectorProfileRecord(
            profile_id=profile.profile_id,
            digest=digest,
            kind=profile.kind,
            repository_id=profile.repository_id,
            workflow_profile_id=profile.workflow_profile_id,
            step_id=profile.step_id,
            registration_id=profile.registration_id,
            registration_epoch=profile.registration_epoch,
            body=canonical_json(profile),
            installed_at_ms=clock.now_ms(),
        )
        tx.collector.insert_profile(record)
        # A superseded profile's transfers stop counting: withdraw what relied on them.
        withdraw_published(tx, clock.now_ms(), profile.repository_id)
        return record


def profile_of(record: CollectorProfileRecord) -> CollectorProfile:
    """Decode a stored collector profile."""
    return decode_collector_profile(json.loads(record.body))


def current_profile(tx: Transaction, task: TaskRecord) -> tuple[CollectorProfileRecord, Any]:
    """The step's current collector profile (``NOT_FOUND`` when none is installed)."""
    record = tx.collector.current_profile(task.repository_id, task.profile_id, task.step_id)
    if record is None:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            f"no collector profile is installed for step {task.step_id!r}; ask the operator "
            "to install one ('agent-task operator install-collector-profile')",
        )
    return record, profile_of(record)


def binding_of(tx: Transaction, profile: CollectorProfile) -> ExecutorBinding:
    """The executor binding ``profile`` authorizes (its enrolled registration epoch)."""
    epochs = [
        e
        for e in tx.authority.enrollments(profile.registration_id)
        if e.registration_epoch == profile.registration_epoch
    ]
    if not epochs:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            "the collector profile names an epoch that is not enrolled",
        )
    return epochs[0].binding
