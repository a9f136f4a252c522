"""The collector client's checks before and after a claim, on this machine.

* :func:`check_before_claim` (same host) and :func:`check_before_claim_remote` (``--clone``)
  read the step's current command profile and check this machine can run it as required;
* :func:`check_remote_descriptor` checks a descriptor is signed by the pinned authority key
  for the pinned audience; :func:`check_local_authority` rechecks a same-host descriptor
  against the authority's own data dir.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from taskcore.authority.gitrev import git_revision
from taskcore.collector.client_calls import WorkflowClient, request_body, result_of
from taskcore.collector.preflight import check_profile_here
from taskcore.collector.state import CollectorKey, CollectorState, PinnedAuthority
from taskcore.contract import CommandCollectorProfile, decode_collector_profile
from taskcore.contract.collector_descriptor import CollectorDescriptor, verify_descriptor
from taskcore.errors import ErrorCode, TaskError
from taskcore.workflow.reads import open_reader

__all__ = [
    "RemoteSubject",
    "check_before_claim",
    "check_before_claim_remote",
    "check_local_authority",
    "check_remote_descriptor",
]


def _no_journal(err: TaskError, data_dir: Path) -> TaskError:
    if err.code is ErrorCode.NOT_FOUND:
        return TaskError(
            ErrorCode.NOT_FOUND,
            f"there is no authority journal in {str(data_dir)[:300]}: same-host collection needs "
            "the service's own data dir (--data-dir or AGENT_TASK_DATA_DIR); a collector on "
            "another machine uses --clone (remote mode). Nothing was claimed",
        )
    return err


def check_before_claim(
    data_dir: Path,
    key: CollectorKey,
    *,
    state: CollectorState,
    repository: str,
    profile: str,
    change: str,
    step_id: str,
    revision: str | None,
) -> Path:
    """Every local check a same-host collection can make before it claims; return the work tree.

    Against the local authority in ``data_dir`` (opened read-only): the repository is
    registered there (``BINDING_MISMATCH``), its latest subject of ``change`` has the revision
    qualification reported (``SUBJECT_STALE``), a current collector profile serves the step
    (``COLLECTOR_PROFILE_CHANGED``) for an epoch whose enrolled key is this collector's
    (``EXECUTOR_NOT_ENROLLED``); then this machine can run the profile as pinned, its sandbox
    and exposure included (:func:`~taskcore.collector.preflight.check_profile_here`:
    ``ISOLATION_UNAVAILABLE``, ``INVALID_VALUE``, ``RUNTIME_MISMATCH``) and the commit's revision is the subject's (``REVISION_MISMATCH``).
    Nothing is claimed when any of these fails.
    """
    try:
        storage = open_reader(data_dir)
    except TaskError as err:
        raise _no_journal(err, data_dir) from None
    try:
        with storage.read() as tx:
            record = tx.authority.get_repository(repository)
            if record is None:
                raise TaskError(
                    ErrorCode.BINDING_MISMATCH,
                    f"the local authority in {str(data_dir)[:300]} does not know repository "
                    f"{repository!r}: same-host collection needs the service's own data dir "
                    "(--data-dir or AGENT_TASK_DATA_DIR). Nothing was claimed",
                )
            subject = tx.authority.latest_subject(repository, profile, change)
            if subject is None or subject.revision != revision:
                raise TaskError(
                    ErrorCode.SUBJECT_STALE,
                    "the local authority's subject of this Change is not the one the service "
                    "reports; is --data-dir the service's data dir? Nothing was claimed",
                )
            installed = tx.collector.current_profile(repository, profile, step_id)
            if installed is None:
                raise TaskError(
                    ErrorCode.COLLECTOR_PROFILE_CHANGED,
                    f"no collector profile is installed for step {step_id!r}; the operator "
                    "installs one with 'agent-task operator install-collector-profile'. "
                    "Nothing was claimed",
                )
            collector_profile = decode_collector_profile(json.loads(installed.body))
            enrolled = {
                e.registration_epoch: e for e in tx.authority.enrollments(installed.registration_id)
            }.get(installed.registration_epoch)
    finally:
        storage.close()
    if enrolled is None or enrolled.public_key != key.public_key:
        raise TaskError(
            ErrorCode.EXECUTOR_NOT_ENROLLED,
            f"this collector's key {key.key_id} is not the key enrolled for registration "
            f"{installed.registration_id}@{installed.registration_epoch}; use the state directory "
            "of the enrolled key (--state-dir) or enroll this key. Nothing was claimed",
        )
    if not isinstance(collector_profile, CommandCollectorProfile):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            "the step is served by a finite-review profile, which this build does not run. "
            "Nothing was claimed",
        )
    work_tree = Path(record.work_tree)
    check_profile_here(collector_profile, state=state, work_tree=work_tree, data_dir=data_dir)
    if git_revision(work_tree, subject.commit) != subject.revision:
        raise TaskError(
            ErrorCode.REVISION_MISMATCH,
            "the registered work tree does not give the subject's revision for its commit. "
            "Nothing was claimed",
        )
    return work_tree


@attrs.frozen(kw_only=True)
class RemoteSubject:
    """What a remote collection checked before its claim: the trusted authority and subject."""

    authority: PinnedAuthority
    commit: str
    revision: str


def check_before_claim_remote(
    client: WorkflowClient,
    state: CollectorState,
    clone: Path,
    *,
    repository: str,
    profile: str,
    change: str,
    revision: str | None,
) -> RemoteSubject:
    """The local checks of a remote collection (no data dir) before it claims anything.

    The collector must have pinned an authority (``NOT_FOUND`` otherwise, naming the command);
    the service's current subject of ``change`` (``requirements``) must be the one
    qualification reported (``SUBJECT_STALE``); the clone must hold its commit (``NOT_FOUND``:
    fetch first) and the revision function over that commit in the clone must give the
    subject's revision (``REVISION_MISMATCH``).
    """
    pinned = state.pinned_authority()
    if pinned is None:
        raise TaskError(
            ErrorCode.NOT_FOUND,
            "this collector trusts no authority yet: run 'agent-task collector pin-authority "
            "--public-key KEY --audience AUDIENCE' with the values 'agent-task operator enroll' "
            "(or 'agent-task operator authority') printed. Nothing was claimed",
        )
    answer = result_of(
        client.workflow(
            repository, profile, "requirements", request_body({"version": 1, "change_id": change})
        )
    )
    subject = answer.get("subject")
    if not subject or not subject.get("current") or subject.get("revision") != revision:
        raise TaskError(
            ErrorCode.SUBJECT_STALE,
            "the service's current subject is not the one qualification reported; ask again. "
            "Nothing was claimed",
        )
    commit = str(subject["commit"])
    try:
        local = git_revision(clone, commit)
    except TaskError as err:
        if err.code is ErrorCode.NOT_FOUND:
            raise TaskError(
                ErrorCode.NOT_FOUND,
                f"the clone at {str(clone)[:300]} does not have commit {commit}: fetch it (git "
                "fetch), then collect again. Nothing was claimed",
            ) from None
        raise
    if local != subject["revision"]:
        raise TaskError(
            ErrorCode.REVISION_MISMATCH,
            "the clone's content at the subject's commit does not give the subject's revision. "
            "Nothing was claimed",
        )
    return RemoteSubject(authority=pinned, commit=commit, revision=local)


def check_remote_descriptor(
    descriptor: CollectorDescriptor,
    expected: RemoteSubject,
    *,
    repository: str,
    profile: str,
) -> None:
    """Accept a descriptor in remote mode only if the pinned authority signed it for us.

    The signature must verify under the pinned key (``INVALID_SIGNATURE``); the audience must be
    the pinned one and the route ours (``BINDING_MISMATCH``); the commit and revision those
    checked in the clone before the claim (``SUBJECT_STALE``). The descriptor's own
    consistency (profile digest, pinned request rebuilt from binding and profile) is checked
    by :meth:`CollectorDescriptor.check`, and the collection recomputes the revision from the
    clone's objects before it runs anything.
    """
    verify_descriptor(descriptor, expected.authority.public_key)
    b = descriptor.binding
    if b.audience != expected.authority.audience:
        raise TaskError(
            ErrorCode.BINDING_MISMATCH, "the descriptor is for another audience than the pinned one"
        )
    if (b.repository_id, b.workflow_profile_id) != (repository, profile):
        raise TaskError(ErrorCode.BINDING_MISMATCH, "the descriptor is for another route")
    if (b.commit, b.revision) != (expected.commit, expected.revision):
        raise TaskError(
            ErrorCode.SUBJECT_STALE, "the descriptor's subject differs from the one checked"
        )


def check_local_authority(descriptor: CollectorDescriptor, data_dir: Path, change: str) -> Path:
    """Recheck ``descriptor`` against the local authority in ``data_dir``; return the work tree.

    The repository must be registered there (``BINDING_MISMATCH`` otherwise), the descriptor
    must be for that authority's audience (``BINDING_MISMATCH``), its collector profile must be
    the one installed (``COLLECTOR_PROFILE_CHANGED``) and its revision and commit those of
    ``change``'s latest subject (``SUBJECT_STALE``). The journal is opened for reading only.
    """
    try:
        storage = open_reader(data_dir)
    except TaskError as err:
        raise _no_journal(err, data_dir) from None
    try:
        with storage.read() as tx:
            b = descriptor.binding
            repository = tx.authority.get_repository(b.repository_id)
            if repository is None:
                raise TaskError(
                    ErrorCode.BINDING_MISMATCH,
                    "the local authority in --data-dir does not know this repository; run "
                    "collect against the service's own data dir",
                )
            if tx.collector.audience() != b.audience:
                raise TaskError(
                    ErrorCode.BINDING_MISMATCH,
                    "the descriptor is for another authority than --data-dir",
                )
            profile = tx.collector.get_profile(descriptor.profile.profile_id)
            if profile is None or profile.digest != descriptor.profile_digest:
                raise TaskError(
                    ErrorCode.COLLECTOR_PROFILE_CHANGED,
                    "the descriptor's collector profile is not the one installed locally",
                )
            subject = tx.authority.latest_subject(b.repository_id, b.workflow_profile_id, change)
            if subject is None or (subject.revision, subject.commit) != (b.revision, b.commit):
                raise TaskError(
                    ErrorCode.SUBJECT_STALE,
                    "the local authority's subject differs from the descriptor; checkpoint again",
                )
            return Path(repository.work_tree)
    finally:
        storage.close()
