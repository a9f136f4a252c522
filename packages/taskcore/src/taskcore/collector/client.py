"""The collector's client side: checkpoint, collect once, retry an upload, ask qualification.

These flows talk to a running service through :class:`WorkflowClient`, the two calls they
need (a workflow operation and the raw collector upload). ``taskcli.common.ServiceClient``
satisfies it over HTTP; anything else with the same two methods does too (the tests use one
over an in-process :class:`taskcore.Service`). taskcore itself never imports an HTTP client.

* :func:`clean_head` and :func:`checkpoint` record a Change's subject at the clean HEAD of a
  work tree;
* :func:`collect_once` follows qualification's ``next`` once: the local checks
  (:func:`check_before_claim`), claim, descriptor, the local authority recheck
  (:func:`check_local_authority`), status recheck, the collection with lease renewal,
  upload, finalize; a failure after the claim releases the attempt in the same call;
* :func:`reconcile_change` finds and reconciles the attempt that keeps a Change from being
  collected (``agent-task reconcile CHANGE``);
* :func:`retry_uploads` resends retained signed bytes (never reruns a command);
* :func:`finalize_if_ready` and :func:`qualification` ask the authority.

What happens along the way is reported as :data:`CollectEvent` values to a ``notify``
callback; printing them is the caller's business.

>>> class Scripted:  # answers qualification with next = none
...     def workflow(self, repository, profile, op, body):
...         return {"operation": op, "result": {"qualified": True, "next": {"operation": "none"}}}
...     def upload(self, repository, profile, data):
...         raise AssertionError("not called")
>>> finalize_if_ready(Scripted(), repository="acme", profile="default", change="c1")["qualified"]
True
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Protocol

import attrs

from taskcore.authority.gitrev import git_revision, work_tree_state
from taskcore.codec import default_codec
from taskcore.collector.collect import collect_command
from taskcore.collector.nextstep import Advice, CommandOptions, advise
from taskcore.collector.preflight import check_profile_here
from taskcore.collector.runtime import Progress
from taskcore.collector.state import AttemptState, CollectorKey, CollectorState, PinnedAuthority
from taskcore.contract import CommandCollectorProfile, decode_collector_profile
from taskcore.contract.collector_descriptor import CollectorDescriptor, verify_descriptor
from taskcore.contract.collector_records import ExecutionRecord
from taskcore.contract.collector_wire import run_summary
from taskcore.errors import ErrorCode, ErrorKind, TaskError
from taskcore.limits import COLLECTOR_RENEW_MIN_MS
from taskcore.workflow.reads import open_reader

__all__ = [
    "Checking",
    "Claimed",
    "Claiming",
    "CollectEvent",
    "Collecting",
    "Finalizing",
    "Recorded",
    "Released",
    "RemoteSubject",
    "RenewalFailed",
    "Running",
    "Uploading",
    "WorkflowClient",
    "check_before_claim",
    "check_before_claim_remote",
    "check_local_authority",
    "check_remote_descriptor",
    "checkpoint",
    "clean_head",
    "collect_once",
    "finalize_if_ready",
    "qualification",
    "reconcile_change",
    "release_attempt",
    "retry_uploads",
    "upload_retained",
]


class WorkflowClient(Protocol):
    """The service calls the collector's client flows need.

    ``workflow`` sends the envelope ``{"operation": op, "request": <body>}`` to the workflow
    route of ``repository``/``profile`` and returns the decoded success body (``{"capability",
    "schema_version", "operation", "result"}``); ``upload`` sends raw transfer bytes to the
    collector upload route and returns the same kind of body. Both raise
    :class:`~taskcore.errors.TaskError` for a refusal, an unreachable service or a malformed
    answer.
    """

    def workflow(self, repository: str, profile: str, op: str, body: bytes) -> Any:
        """Run workflow operation ``op`` with the JSON request ``body``."""
        ...

    def upload(self, repository: str, profile: str, data: bytes) -> Any:
        """Upload the signed transfer ``data``."""
        ...


# -- what the flow reports ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Checking:
    """Running the local checks before claiming step ``step_id``."""

    step_id: str


@attrs.frozen(kw_only=True)
class Claiming:
    """About to claim the collector task ``task_id`` of step ``step_id``."""

    step_id: str
    task_id: str


@attrs.frozen(kw_only=True)
class Claimed:
    """The claim committed: attempt ``attempt_id``, leased until ``lease_expires_at_ms``."""

    attempt_id: str
    lease_expires_at_ms: int


@attrs.frozen(kw_only=True)
class Released:
    """A failure after the claim; attempt ``attempt_id`` was reconciled (claimable again)."""

    attempt_id: str
    error: str


@attrs.frozen(kw_only=True)
class Collecting:
    """The checks passed; running ``argv`` on ``commit``."""

    commit: str
    argv: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Running:
    """A progress tick while the command runs."""

    progress: Progress


@attrs.frozen(kw_only=True)
class RenewalFailed:
    """A lease renewal was refused or failed; the run continues."""

    error: TaskError = attrs.field(eq=False)


@attrs.frozen(kw_only=True)
class Recorded:
    """The command finished; its record is signed and retained."""

    record: ExecutionRecord


@attrs.frozen(kw_only=True)
class Uploading:
    """About to upload the retained transfer."""


@attrs.frozen(kw_only=True)
class Finalizing:
    """Every required task is collected; about to finalize the receipt."""


CollectEvent = (
    Checking
    | Claiming
    | Claimed
    | Collecting
    | Running
    | RenewalFailed
    | Recorded
    | Released
    | Uploading
    | Finalizing
)
"""What :func:`collect_once` reports to its ``notify`` callback, in order."""


def _ignore(_: CollectEvent) -> None:
    return None


def _body(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode("utf-8")


def _result(answer: Any) -> Any:
    return answer["result"]


# -- asking ---------------------------------------------------------------------------------------


def qualification(
    client: WorkflowClient, *, repository: str, profile: str, change: str
) -> dict[str, Any]:
    """Return the read-only qualification answer for ``change``'s current subject.

    >>> class Echo:
    ...     def workflow(self, repository, profile, op, body):
    ...         return {"result": {"op": op, "request": json.loads(body)}}
    ...     def upload(self, repository, profile, data): ...
    >>> qualification(Echo(), repository="acme", profile="default", change="c1")
    {'op': 'qualification', 'request': {'version': 1, 'change_id': 'c1'}}
    """
    answer: dict[str, Any] = _result(
        client.workflow(
            repository, profile, "qualification", _body({"version": 1, "change_id": change})
        )
    )
    return answer


def finalize_if_ready(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    change: str,
    notify: Callable[[CollectEvent], None] = _ignore,
) -> dict[str, Any]:
    """Finalize ``change``'s receipt if qualification says so; return the qualification after."""
    answer = qualification(client, repository=repository, profile=profile, change=change)
    if answer["next"]["operation"] == "collector_finalize":
        notify(Finalizing())
        client.workflow(
            repository, profile, "collector_finalize", _body({"version": 1, "change_id": change})
        )
        answer = qualification(client, repository=repository, profile=profile, change=change)
    return answer


# -- checkpoint -----------------------------------------------------------------------------------


def clean_head(workspace: Path) -> str:
    """Return the HEAD commit of ``workspace`` if the work tree is clean.

    A work tree without a commit is ``NOT_FOUND``; one with uncommitted or untracked changes
    is ``CONFLICT``: commit first, then checkpoint.
    """
    state = work_tree_state(workspace)
    if state.head is None:
        raise TaskError(ErrorCode.NOT_FOUND, "the work tree has no commit yet; commit first")
    if not state.clean:
        listed = ", ".join(state.paths) or "an operation in progress"
        more = state.changed_paths - len(state.paths)
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the work tree has uncommitted changes ({listed}"
            + (f" and {more} more" if more > 0 else "")
            + "); commit them (or add them to .gitignore), then checkpoint again",
        )
    return state.head


def checkpoint(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    change: str,
    commit: str,
    context: str = "",
    retry: bool = False,
) -> dict[str, Any]:
    """Record ``change``'s subject at ``commit`` (see :func:`clean_head`); return the result.

    With ``retry`` the same inputs are recorded again as a new version when the newest
    subject's run failed or no longer counts (``CheckpointRequest.retry``).
    """
    body: dict[str, Any] = {"version": 1, "change_id": change, "commit": commit, "context": context}
    if retry:
        body["retry"] = True
    answer: dict[str, Any] = _result(
        client.workflow(repository, profile, "checkpoint", _body(body))
    )
    return answer


# -- collect --------------------------------------------------------------------------------------


_TRANSIENT_KINDS: Final = frozenset(
    {ErrorKind.UNAVAILABLE, ErrorKind.RATE_LIMITED, ErrorKind.INTERNAL, ErrorKind.UNAUTHENTICATED}
)
"""Upload failures worth retrying with the same bytes; any other refusal is final."""


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
    answer = _result(
        client.workflow(
            repository, profile, "requirements", _body({"version": 1, "change_id": change})
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


def _ticker(
    notify: Callable[[CollectEvent], None], heartbeat: Callable[[], None], every_ms: int
) -> Callable[[Progress], None]:
    """Report each progress tick and renew the lease every ``every_ms`` while the command runs."""
    last = [0]

    def tick(progress: Progress) -> None:
        notify(Running(progress=progress))
        if progress.elapsed_ms - last[0] >= every_ms:
            last[0] = progress.elapsed_ms
            try:
                heartbeat()
            except TaskError as err:
                # The run continues; the authority judges the upload on its own rules.
                notify(RenewalFailed(error=err))

    return tick


def upload_retained(
    client: WorkflowClient, attempt: AttemptState, repository: str, profile: str
) -> dict[str, Any]:
    """Upload ``attempt``'s retained transfer bytes; keep and return the authority's answer."""
    envelope = attempt.read_transfer()
    result: dict[str, Any] = _result(client.upload(repository, profile, envelope))
    attempt.write_json(attempt.upload_path, result)
    return result


def _mutation(claimed: dict[str, Any], action: str, reason: str | None) -> bytes:
    attempt = claimed["attempt"]
    return _body(
        {
            "version": 1,
            "request_id": f"{action[:5]}-" + secrets.token_hex(12),
            "action": action,
            "task_id": claimed["task_id"],
            "task_digest": claimed["task_digest"],
            "attempt_id": attempt["attempt_id"],
            "attempt_digest": claimed["attempt_digest"],
            "execution_operation_id": attempt["execution_operation_id"],
            "executor": attempt["executor"],
            "fence": attempt["fence"],
            "reason": reason,
        }
    )


def release_attempt(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    claimed: dict[str, Any],
    reason: str,
) -> TaskError | None:
    """Reconcile a claimed attempt so its task is claimable again; return why it failed, if so.

    ``claimed`` is a claim's outcome (``{task_id, task_digest, attempt, attempt_digest, ...}``)
    or a status view of the attempt (the same fields).
    """
    try:
        client.workflow(
            repository, profile, "reconcile", _mutation(claimed, "reconcile", reason[:500])
        )
    except TaskError as err:
        return err
    return None


def collect_once(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    change: str,
    data_dir: Path | None = None,
    state: CollectorState,
    lease_ms: int,
    notify: Callable[[CollectEvent], None] = _ignore,
    options: CommandOptions | None = None,
    clone: Path | None = None,
) -> dict[str, Any]:
    """Follow qualification's ``next`` once: check, claim, describe, collect, upload, finalize.

    Same-host mode (``data_dir``, the service's own data dir) rechecks everything against the
    local authority; remote mode (``clone``, a git clone of the repository, no data dir)
    accepts only a descriptor the pinned authority signed (:func:`check_remote_descriptor`)
    and runs on the clone.

    When ``next`` is ``collector_finalize`` it only finalizes; when it is anything but
    ``collector_claim`` it is a ``CONFLICT`` naming the command to run instead
    (:func:`~taskcore.collector.nextstep.advise`), and nothing is claimed. Every local check
    that can be made before a claim is made first (:func:`check_before_claim`). After the
    claim, any failure before the upload releases the attempt in the same call (a
    ``reconcile``), so the Change can be collected again; the error says so and names the
    attempt. A transient upload failure keeps the attempt and the signed transfer and names
    the ``retry-upload`` command; a refused upload releases the attempt. While the command
    runs the lease is renewed every third of it (at least
    :data:`~taskcore.limits.COLLECTOR_RENEW_MIN_MS` apart).

    Returns ``{"collected", "attempt_id", "record_outcome", "run", "upload",
    "qualification", "next_command", "elapsed_ms", "command_ms"}`` (``{"collected": false,
    "upload": null, "qualification", "next_command"}`` when it only finalized).
    """
    started = time.monotonic()
    options = options or CommandOptions()
    answer = qualification(client, repository=repository, profile=profile, change=change)
    step = answer["next"]
    if step["operation"] == "collector_finalize":
        final = finalize_if_ready(
            client, repository=repository, profile=profile, change=change, notify=notify
        )
        return {
            "collected": False,
            "upload": None,
            "qualification": final,
            "next_command": _advice(final, change, options).command,
        }
    if step["operation"] != "collector_claim":
        advice = _advice(answer, change, options)
        raise TaskError(
            ErrorCode.CONFLICT,
            f"nothing to collect: qualification says next is {step['operation']!r}"
            + (f" for task {step['task_id']}" if "task_id" in step else "")
            + (
                f" ({', '.join(sorted({f['code'] for f in answer['failures']}))})"
                if answer["failures"]
                else ""
            )
            + (f"; run: {advice.command}" if advice.command else f". {advice.sentence}"),
            details={"next": step, "next_command": advice.command},
        )
    task = next(t for t in answer["tasks"] if t["task_id"] == step["task_id"])
    key = state.load_key()
    notify(Checking(step_id=task["step_id"]))
    remote: RemoteSubject | None = None
    if clone is not None:
        work_tree = Path(clone)
        remote = check_before_claim_remote(
            client,
            state,
            work_tree,
            repository=repository,
            profile=profile,
            change=change,
            revision=answer["revision"],
        )
    elif data_dir is not None:
        work_tree = check_before_claim(
            data_dir,
            key,
            state=state,
            repository=repository,
            profile=profile,
            change=change,
            step_id=task["step_id"],
            revision=answer["revision"],
        )
    else:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "give the service's data dir (same host) or --clone PATH (a collector elsewhere)",
        )
    notify(Claiming(step_id=task["step_id"], task_id=task["task_id"]))
    claimed = _result(
        client.workflow(
            repository,
            profile,
            "collector_claim",
            _body(
                {
                    "version": 1,
                    "request_id": "claim-" + secrets.token_hex(12),
                    "task_id": task["task_id"],
                    "task_digest": task["task_digest"],
                    "execution_operation_id": "exec-" + secrets.token_hex(12),
                    "requested_lease_ms": lease_ms,
                }
            ),
        )
    )
    attempt = claimed["attempt"]
    attempt_id = attempt["attempt_id"]
    notify(Claimed(attempt_id=attempt_id, lease_expires_at_ms=claimed["lease_expires_at_ms"]))

    def release(err: BaseException) -> TaskError:
        code = err.code if isinstance(err, TaskError) else ErrorCode.INTERNAL
        why = err.describe() if isinstance(err, TaskError) else f"{type(err).__name__}: {err}"
        refused = release_attempt(
            client,
            repository=repository,
            profile=profile,
            claimed=claimed,
            reason=f"agent-task collect failed before uploading ({code.value})",
        )
        if refused is None:
            with contextlib.suppress(TaskError, OSError):
                state.record_claim(attempt_id, "released", note=f"{code.value}: {why}"[:500])
            notify(Released(attempt_id=attempt_id, error=code.value))
            again = advise({"operation": "collector_claim"}, (), change=change, options=options)
            return TaskError(
                code,
                f"{why}; attempt {attempt_id} was released (reconciled), so the Change can be "
                f"collected again: fix the cause, then run: {again.command}",
                details={"attempt_id": attempt_id, "next_command": again.command},
            )
        with contextlib.suppress(TaskError, OSError):
            state.record_claim(attempt_id, "claimed", note=f"{code.value}: {why}"[:500])
        force = shlex.join(["agent-task", "reconcile", change, "--force", *options.route_flags()])
        return TaskError(
            code,
            f"{why}; releasing attempt {attempt_id} failed too ({refused.code.value}): once the "
            f"service answers, run: {force}",
            details={"attempt_id": attempt_id, "next_command": force},
        )

    handle = {
        "version": 1,
        "task_id": claimed["task_id"],
        "task_digest": claimed["task_digest"],
        "attempt_id": attempt_id,
    }
    try:
        state.record_claim(
            attempt_id,
            "claimed",
            task_id=claimed["task_id"],
            step_id=task["step_id"],
            change_id=change,
            repository_id=repository,
            profile_id=profile,
            fence=attempt["fence"],
            claimed_at_ms=int(time.time() * 1000),
            lease_expires_at_ms=claimed["lease_expires_at_ms"],
        )
        raw = _result(client.workflow(repository, profile, "collector_descriptor", _body(handle)))
        descriptor = default_codec().structure(raw, CollectorDescriptor)
        descriptor.check()
        if remote is not None:
            check_remote_descriptor(descriptor, remote, repository=repository, profile=profile)
        else:
            assert data_dir is not None
            work_tree = check_local_authority(descriptor, data_dir, change)
        status = _result(client.workflow(repository, profile, "status", _body(handle)))
        if not status["currently_applicable"]:
            raise TaskError(
                ErrorCode.CONFLICT,
                f"the attempt is {status['state']} and no longer applicable; nothing was run",
            )
        notify(Collecting(commit=descriptor.binding.commit, argv=descriptor.profile.recipe.argv))

        def heartbeat() -> None:
            client.workflow(repository, profile, "heartbeat", _mutation(claimed, "heartbeat", None))

        result = collect_command(
            descriptor,
            state=state,
            repository=work_tree,
            progress=_ticker(
                notify, heartbeat, max(attempt["lease_ms"] // 3, COLLECTOR_RENEW_MIN_MS)
            ),
        )
    except (TaskError, OSError, ValueError, KeyboardInterrupt) as err:
        released = release(err)
        if isinstance(err, KeyboardInterrupt):
            raise
        raise released from None
    record = result.record
    run = (
        None
        if record is None
        else attrs.asdict(run_summary(record, task_id=claimed["task_id"], step_id=task["step_id"]))
    )
    state.record_claim(attempt_id, "upload_pending", attempt_dir=result.attempt.path.name)
    if record is not None:
        notify(Recorded(record=record))
    notify(Uploading())
    try:
        upload = upload_retained(client, result.attempt, repository, profile)
    except TaskError as err:
        if err.code.kind in _TRANSIENT_KINDS:
            retry = shlex.join(
                [
                    "agent-task",
                    "retry-upload",
                    "--attempt",
                    result.attempt.path.name,
                    *(["--url", options.url] if options.url else []),
                    *(["--token-file", options.token_file] if options.token_file else []),
                    *(["--state-dir", options.state_dir] if options.state_dir else []),
                ]
            )
            state.record_claim(attempt_id, "upload_pending", note=err.code.value)
            raise TaskError(
                err.code,
                f"{err.message}; the signed transfer of attempt {attempt_id} is retained: run "
                f"{retry}, then {advise({'operation': 'collector_finalize'}, (), change=change, options=options).command}",
                details={**err.details, "attempt_id": attempt_id, "next_command": retry},
            ) from None
        raise release(err) from None
    state.record_claim(attempt_id, "uploaded", outcome=upload["record_outcome"])
    final = finalize_if_ready(
        client, repository=repository, profile=profile, change=change, notify=notify
    )
    return {
        "collected": True,
        "attempt_id": attempt_id,
        "record_outcome": upload["record_outcome"],
        "run": run,
        "upload": upload,
        "qualification": final,
        "next_command": _advice(final, change, options).command,
        "elapsed_ms": int((time.monotonic() - started) * 1000),
        "command_ms": None if record is None else record.duration_ms,
    }


def _advice(answer: dict[str, Any], change: str, options: CommandOptions) -> Advice:
    return advise(
        answer["next"],
        answer["failures"],
        change=change,
        options=options,
        qualified=bool(answer["qualified"]),
    )


# -- reconcile ------------------------------------------------------------------------------------


def reconcile_change(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    change: str,
    force: bool = False,
    reason: str = "reconciled with 'agent-task reconcile'",
    options: CommandOptions | None = None,
    state: CollectorState | None = None,
) -> dict[str, Any]:
    """Reconcile the attempt that keeps ``change`` from being collected; find it by itself.

    The task is qualification's ``next.task_id`` when ``next`` is ``reconcile`` (an expired or
    cancelled attempt, or an unresolved one of an older subject); with ``force``, also a task
    whose attempt is still leased (``attempt_in_progress``: a collection that died without
    releasing it). The task's newest attempt is read with the ``task`` operation, so nothing
    has to be copied by hand. Anything else is a ``CONFLICT`` naming the command to run
    instead.

    With the collector's ``state``: if this collector retained a signed transfer of that
    attempt that was never uploaded, it is uploaded instead (evidence is not thrown away) and
    the receipt finalized when it can be; the claim record of a reconciled attempt says
    ``released``. Returns ``{"reconciled": {task_id, attempt_id, fence, new_fence} | null,
    "uploaded": {attempt_id, record_outcome} | null, "outcome", "qualification",
    "next_command"}``.
    """
    options = options or CommandOptions()
    answer = qualification(client, repository=repository, profile=profile, change=change)
    step = answer["next"]
    target: str | None = step.get("task_id") if step["operation"] == "reconcile" else None
    if target is None:
        live = [f["task_id"] for f in answer["failures"] if f["code"] == "attempt_in_progress"]
        if live and not force:
            raise TaskError(
                ErrorCode.CONFLICT,
                f"task {live[0]} has a live attempt: a collection may still be running. Wait "
                "for it, or pass --force if it died (the old execution may still run)",
                details={"next": step},
            )
        target = live[0] if live else None
    if target is None:
        advice = _advice(answer, change, options)
        raise TaskError(
            ErrorCode.CONFLICT,
            f"nothing to reconcile: qualification says next is {step['operation']!r}"
            + (f"; run: {advice.command}" if advice.command else f". {advice.sentence}"),
            details={"next": step, "next_command": advice.command},
        )
    view = _result(
        client.workflow(repository, profile, "task", _body({"version": 1, "task_id": target}))
    )
    current = view["current_attempt"]
    if current is None or view["state"] not in ("claimed", "cancelled"):
        raise TaskError(
            ErrorCode.CONFLICT,
            f"task {target} has no unresolved attempt (it is {view['state']}); ask "
            "qualification again",
        )
    attempt_id = current["attempt"]["attempt_id"]
    local = state.claim(attempt_id) if state is not None else None
    if state is not None and local is not None and local.get("attempt_dir"):
        retained = state.attempt(str(local["attempt_dir"]))
        if retained.has_transfer() and retained.read_json(retained.upload_path) is None:
            try:
                view_ = upload_retained(client, retained, repository, profile)
            except TaskError as err:
                if err.code.kind in _TRANSIENT_KINDS:
                    raise
            else:
                state.record_claim(attempt_id, "uploaded", outcome=view_["record_outcome"])
                final = finalize_if_ready(
                    client, repository=repository, profile=profile, change=change
                )
                return {
                    "reconciled": None,
                    "uploaded": {
                        "attempt_id": attempt_id,
                        "record_outcome": view_["record_outcome"],
                    },
                    "outcome": view_,
                    "qualification": final,
                    "next_command": _advice(final, change, options).command,
                }
    claimed = {
        "task_id": current["task_id"],
        "task_digest": current["task_digest"],
        "attempt": current["attempt"],
        "attempt_digest": current["attempt_digest"],
    }
    outcome = _result(
        client.workflow(repository, profile, "reconcile", _mutation(claimed, "reconcile", reason))
    )
    if state is not None and local is not None:
        state.record_claim(attempt_id, "released", note="reconciled with 'agent-task reconcile'")
    final = qualification(client, repository=repository, profile=profile, change=change)
    supersession = outcome.get("fence_supersession") or {}
    return {
        "uploaded": None,
        "reconciled": {
            "task_id": target,
            "change_id": view["change_id"],
            "change_version": view["change_version"],
            "attempt_id": current["attempt"]["attempt_id"],
            "fence": current["attempt"]["fence"],
            "new_fence": supersession.get("new_fence"),
        },
        "outcome": outcome,
        "qualification": final,
        "next_command": _advice(final, change, options).command,
    }


# -- retry-upload ---------------------------------------------------------------------------------


def retry_uploads(
    client: WorkflowClient,
    state: CollectorState,
    *,
    attempt_name: str | None = None,
    every: bool = False,
) -> list[dict[str, Any]]:
    """Resend the identical retained signed bytes; never rerun a command.

    With ``attempt_name`` only that attempt directory is sent; otherwise every retained
    transfer whose upload did not complete (every one with ``every``). The route comes from
    the retained descriptor (``INTEGRITY_FAILURE`` when it is unreadable). Returns one
    ``{"attempt", ...the authority's answer}`` per upload; an exact retry of an imported
    transfer gets the authority's historical view.
    """
    attempts = (state.attempt(attempt_name),) if attempt_name is not None else state.attempts()
    out = []
    for attempt in attempts:
        if not attempt.has_transfer():
            continue
        if attempt_name is None and not every and attempt.read_json(attempt.upload_path):
            continue
        descriptor = attempt.read_json(attempt.descriptor_path) or {}
        binding = descriptor.get("binding") or {}
        repository, profile = binding.get("repository_id"), binding.get("workflow_profile_id")
        if not isinstance(repository, str) or not isinstance(profile, str):
            raise TaskError(
                ErrorCode.INTEGRITY_FAILURE,
                f"attempt {attempt.path.name} has no readable descriptor",
            )
        view = upload_retained(client, attempt, repository, profile)
        out.append({"attempt": attempt.path.name, **view})
    return out
