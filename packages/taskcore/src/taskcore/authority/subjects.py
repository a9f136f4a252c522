"""Subjects over git: compile a checkpoint from a commit, record it, and judge currency.

A checkpoint names a Change and a commit of the operator-registered repository. Compiling it
(:func:`compile_checkpoint`) runs outside any journal transaction: it checks the commit is in
the repository, derives the immutable revision (:func:`taskcore.authority.gitrev.git_revision`)
and reads every named reference of the installed plan at that commit, pinning its SHA-256
(bounded at 128 KiB, UTF-8 only). Recording it (:func:`record_subject`) runs inside the
writer transaction and first rechecks that the repository, policy epoch, profile and
requirement are still what was compiled against; a changed authority is refused, never
silently recompiled.

A subject is *current* (:func:`check_current`) while it is the newest subject of its Change
under its profile and the repository's policy epoch, the profile's target and the profile's
installed requirement are still the ones it binds. Superseded subjects stay readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from taskcore.authority import gitrev
from taskcore.authority.requirement import CompiledPlan, WorkflowRequirement, compile_requirement
from taskcore.canonical import canonical_json
from taskcore.codec import default_codec, parse_json
from taskcore.contract import NamedReference
from taskcore.digest import domain_digest, sha256_hex
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import CONTEXT_MAX_BYTES, REFERENCE_BODY_MAX_BYTES
from taskcore.store.authority_api import (
    ProfileRecord,
    RepositoryRecord,
    RequirementRecord,
    SubjectRecord,
)
from taskcore.store.storage import Transaction

__all__ = [
    "SUBJECT_BINDING_DOMAIN",
    "AuthorityView",
    "CompiledCheckpoint",
    "check_current",
    "compile_checkpoint",
    "load_plan",
    "load_route",
    "record_subject",
    "subject_references",
]

SUBJECT_BINDING_DOMAIN: Final = "agentscm.agent-workflow-subject-binding.v1"
"""Digest domain of a subject's bound inputs (without its version), see ``docs/git-mapping.md``."""


@attrs.frozen(kw_only=True)
class AuthorityView:
    """What a route resolves to: the repository, the profile and its installed requirement."""

    repository: RepositoryRecord
    profile: ProfileRecord
    requirement: RequirementRecord

    def plan(self) -> CompiledPlan:
        """The compiled plan of the profile's requirement."""
        return load_plan(self.requirement)


def _not_found() -> TaskError:
    # A repository of another workspace is indistinguishable from a missing one.
    return TaskError(
        ErrorCode.NOT_FOUND,
        "no such repository and profile here; check --repository and --profile (the URL) "
        "against 'agent-task operator show --repository R' on the service host",
    )


def load_route(
    tx: Transaction, *, workspace: str, repository_id: str, profile_id: str
) -> AuthorityView:
    """Resolve a route for an actor of ``workspace``; anything else is ``NOT_FOUND``."""
    repository = tx.authority.get_repository(repository_id)
    if repository is None or repository.workspace != workspace:
        raise _not_found()
    profile = tx.authority.get_profile(repository_id, profile_id)
    if profile is None:
        raise _not_found()
    requirement = tx.authority.get_requirement(repository_id, profile.requirement_digest)
    if requirement is None:
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "the profile's requirement is not installed")
    return AuthorityView(repository=repository, profile=profile, requirement=requirement)


_PLANS: dict[str, CompiledPlan] = {}


def load_plan(record: RequirementRecord) -> CompiledPlan:
    """Decode and compile an installed requirement; the digests must match what was installed.

    Plans are immutable, so compiled plans are cached by requirement digest.
    """
    cached = _PLANS.get(record.requirement_digest)
    if cached is not None:
        return cached
    requirement = default_codec().decode(
        WorkflowRequirement, record.body, max_bytes=len(record.body) + 1
    )
    plan = compile_requirement(requirement)
    if plan.requirement_digest != record.requirement_digest or plan.digest != record.plan_digest:
        raise TaskError(
            ErrorCode.INTEGRITY_FAILURE, "an installed requirement does not match its digest"
        )
    if len(_PLANS) > 256:
        _PLANS.clear()
    _PLANS[record.requirement_digest] = plan
    return plan


@attrs.frozen(kw_only=True)
class CompiledCheckpoint:
    """A checkpoint compiled from git, not yet recorded.

    Carries the authority state it was compiled against (policy epoch and digest, profile
    generation, target and requirement), so recording can refuse a changed authority.
    """

    repository_id: str
    profile_id: str
    change_id: str
    commit: str
    revision: str
    context: bytes
    context_digest: str
    target: str
    policy_epoch: int
    policy_digest: str
    profile_generation: int
    requirement_digest: str
    plan_digest: str
    references: tuple[tuple[str, tuple[NamedReference, ...]], ...]

    def references_bytes(self) -> bytes:
        """Canonical JSON of the compiled references, per step in plan order."""
        return canonical_json({step: refs for step, refs in self.references})

    def binding_digest(self) -> str:
        """Digest of every bound input except the version (equal inputs: same subject)."""
        return domain_digest(
            SUBJECT_BINDING_DOMAIN,
            canonical_json(
                {
                    "repository_id": self.repository_id,
                    "profile_id": self.profile_id,
                    "change_id": self.change_id,
                    "revision": self.revision,
                    "context_digest": self.context_digest,
                    "target": self.target,
                    "policy_epoch": self.policy_epoch,
                    "policy_digest": self.policy_digest,
                    "requirement_digest": self.requirement_digest,
                    "plan_digest": self.plan_digest,
                    "references": self.references_bytes().decode("utf-8"),
                }
            ),
        )


def _reference_error(step: str, name: str, why: str) -> TaskError:
    return TaskError(
        ErrorCode.INVALID_VALUE,
        f"named reference {name!r} of step {step!r} {why} at this commit; fix the file or the "
        "installed requirement, then checkpoint again",
    )


def compile_checkpoint(
    view: AuthorityView, *, change_id: str, commit: str, context: bytes
) -> CompiledCheckpoint:
    """Compile a checkpoint from git (no journal transaction is open while this runs)."""
    if len(context) > CONTEXT_MAX_BYTES:
        raise TaskError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"the context is {len(context)} bytes; the limit is {CONTEXT_MAX_BYTES}",
            path="$.context",
        )
    work_tree = view.repository.work_tree
    gitrev.resolve_commit(work_tree, commit)
    revision = gitrev.git_revision(work_tree, commit)
    plan = view.plan()
    compiled: list[tuple[str, tuple[NamedReference, ...]]] = []
    for step in plan.steps:
        refs: list[NamedReference] = []
        for spec in step.step.references:
            read = gitrev.read_blob_at(
                work_tree, commit, spec.path, max_bytes=REFERENCE_BODY_MAX_BYTES
            )
            if read.status == gitrev.BlobStatus.MISSING:
                raise _reference_error(step.step.step_id, spec.name, "is missing")
            if read.status == gitrev.BlobStatus.NOT_A_FILE:
                raise _reference_error(step.step.step_id, spec.name, "is not a regular file")
            if read.status == gitrev.BlobStatus.TOO_LARGE:
                raise _reference_error(
                    step.step.step_id, spec.name, f"is larger than {REFERENCE_BODY_MAX_BYTES} bytes"
                )
            assert read.data is not None
            try:
                read.data.decode("utf-8")
            except UnicodeDecodeError:
                raise _reference_error(step.step.step_id, spec.name, "is not UTF-8") from None
            refs.append(
                NamedReference(name=spec.name, sha256=sha256_hex(read.data), path=spec.path)
            )
        compiled.append((step.step.step_id, tuple(refs)))
    return CompiledCheckpoint(
        repository_id=view.repository.repository_id,
        profile_id=view.profile.profile_id,
        change_id=change_id,
        commit=commit,
        revision=revision,
        context=context,
        context_digest=sha256_hex(context),
        target=view.profile.target,
        policy_epoch=view.repository.policy_epoch,
        policy_digest=view.repository.policy_digest,
        profile_generation=view.profile.generation,
        requirement_digest=view.profile.requirement_digest,
        plan_digest=plan.digest,
        references=tuple(compiled),
    )


def _changed(what: str) -> TaskError:
    return TaskError(
        ErrorCode.CONFLICT,
        f"the {what} changed while the checkpoint was compiled; checkpoint again",
    )


def record_subject(
    tx: Transaction, compiled: CompiledCheckpoint, *, now_ms: int, new_version: bool = False
) -> tuple[SubjectRecord, bool]:
    """Record ``compiled`` as the Change's newest subject; return it and whether it is new.

    Runs inside the writer transaction. Rechecks the authority state the checkpoint was
    compiled against. Equal bound inputs to the newest subject record nothing, unless
    ``new_version`` (a retry the journal allowed): then the same inputs become the next Change
    version, whose tasks have fresh IDs.
    """
    repository = tx.authority.get_repository(compiled.repository_id)
    if repository is None:
        raise _changed("repository registration")
    if (repository.policy_epoch, repository.policy_digest) != (
        compiled.policy_epoch,
        compiled.policy_digest,
    ):
        raise _changed("repository policy")
    profile = tx.authority.get_profile(compiled.repository_id, compiled.profile_id)
    if profile is None or (profile.generation, profile.target, profile.requirement_digest) != (
        compiled.profile_generation,
        compiled.target,
        compiled.requirement_digest,
    ):
        raise _changed("profile")
    binding = compiled.binding_digest()
    latest = tx.authority.latest_subject(
        compiled.repository_id, compiled.profile_id, compiled.change_id
    )
    if latest is not None and latest.binding_digest == binding and not new_version:
        return latest, False
    record = SubjectRecord(
        subject_seq=0,
        repository_id=compiled.repository_id,
        profile_id=compiled.profile_id,
        change_id=compiled.change_id,
        change_version=1 if latest is None else latest.change_version + 1,
        revision=compiled.revision,
        commit=compiled.commit,
        context=compiled.context,
        context_digest=compiled.context_digest,
        target=compiled.target,
        policy_epoch=compiled.policy_epoch,
        policy_digest=compiled.policy_digest,
        requirement_digest=compiled.requirement_digest,
        plan_digest=compiled.plan_digest,
        references=compiled.references_bytes(),
        binding_digest=binding,
        recorded_at_ms=now_ms,
    )
    seq = tx.authority.insert_subject(record)
    if latest is not None:
        tx.authority.supersede_subject(latest.subject_seq, now_ms)
    return attrs.evolve(record, subject_seq=seq), True


def subject_references(subject: SubjectRecord) -> Mapping[str, tuple[NamedReference, ...]]:
    """Decode the compiled named references of a subject, per step."""
    codec = default_codec()
    tree = parse_json(subject.references, max_bytes=len(subject.references) + 1)
    if not isinstance(tree, dict):
        raise TaskError(ErrorCode.INTEGRITY_FAILURE, "a subject's references are damaged")
    return {
        str(step): codec.structure(refs, tuple[NamedReference, ...]) for step, refs in tree.items()
    }


def check_current(tx: Transaction, subject: SubjectRecord) -> None:
    """Raise ``SUBJECT_STALE`` unless ``subject`` is current (see the module docstring).

    Every check reads the authority through the same transaction as the journal transition
    that relies on it.
    """
    repository = tx.authority.get_repository(subject.repository_id)
    if repository is None:
        raise TaskError(ErrorCode.SUBJECT_STALE, "the repository is no longer registered")
    latest = tx.authority.latest_subject_seq(
        subject.repository_id, subject.profile_id, subject.change_id
    )
    if latest != subject.subject_seq:
        raise TaskError(
            ErrorCode.SUBJECT_STALE,
            "a newer checkpoint superseded this subject; follow next for the current one",
        )
    if repository.policy_epoch != subject.policy_epoch:
        raise TaskError(ErrorCode.SUBJECT_STALE, "the repository policy changed; checkpoint again")
    profile = tx.authority.get_profile(subject.repository_id, subject.profile_id)
    if profile is None or profile.target != subject.target:
        raise TaskError(ErrorCode.SUBJECT_STALE, "the profile's target changed; checkpoint again")
    if profile.requirement_digest != subject.requirement_digest:
        raise TaskError(
            ErrorCode.SUBJECT_STALE, "the profile's installed requirement changed; checkpoint again"
        )
