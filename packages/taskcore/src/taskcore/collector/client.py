"""The collector's client side: checkpoint, collect once, retry an upload, ask qualification.

These flows talk to a running service through :class:`WorkflowClient`, the two calls they
need (a workflow operation and the raw collector upload). ``taskcli.common.ServiceClient``
satisfies it over HTTP; anything else with the same two methods does too (the tests use one
over an in-process :class:`taskcore.Service`). taskcore itself never imports an HTTP client.

* :func:`clean_head` and :func:`checkpoint` record a Change's subject at the clean HEAD of a
  work tree;
* :func:`collect_once` follows qualification's ``next`` once: claim, descriptor, the local
  authority recheck (:func:`check_local_authority`), status recheck, the collection with lease
  renewal, upload, finalize;
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

import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import attrs

from taskcore.authority.gitrev import work_tree_state
from taskcore.codec import default_codec
from taskcore.collector.collect import collect_command
from taskcore.collector.descriptor import CollectorDescriptor
from taskcore.collector.preflight import check_before_claim
from taskcore.collector.records import ExecutionRecord
from taskcore.collector.runtime import Progress
from taskcore.collector.state import AttemptState, CollectorState
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import COLLECTOR_RENEW_MIN_MS
from taskcore.workflow.reads import open_reader

__all__ = [
    "Claiming",
    "CollectEvent",
    "Collecting",
    "Finalizing",
    "Recorded",
    "RenewalFailed",
    "Running",
    "Uploading",
    "WorkflowClient",
    "check_local_authority",
    "checkpoint",
    "clean_head",
    "collect_once",
    "finalize_if_ready",
    "qualification",
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
class Claiming:
    """About to claim the collector task ``task_id`` of step ``step_id``."""

    step_id: str
    task_id: str


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


CollectEvent = Claiming | Collecting | Running | RenewalFailed | Recorded | Uploading | Finalizing
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
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the work tree has {state.changed_paths or 'untracked or'} uncommitted "
            "change(s); commit them, then checkpoint again",
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
) -> dict[str, Any]:
    """Record ``change``'s subject at ``commit`` (see :func:`clean_head`); return the result."""
    answer: dict[str, Any] = _result(
        client.workflow(
            repository,
            profile,
            "checkpoint",
            _body({"version": 1, "change_id": change, "commit": commit, "context": context}),
        )
    )
    return answer


# -- collect --------------------------------------------------------------------------------------


def check_local_authority(descriptor: CollectorDescriptor, data_dir: Path, change: str) -> Path:
    """Recheck ``descriptor`` against the local authority in ``data_dir``; return the work tree.

    The repository must be registered there (``BINDING_MISMATCH`` otherwise), the descriptor
    must be for that authority's audience (``BINDING_MISMATCH``), its collector profile must be
    the one installed (``COLLECTOR_PROFILE_CHANGED``) and its revision and commit those of
    ``change``'s latest subject (``SUBJECT_STALE``). The journal is opened for reading only.
    """
    storage = open_reader(data_dir)
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


def collect_once(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    change: str,
    data_dir: Path,
    state: CollectorState,
    lease_ms: int,
    notify: Callable[[CollectEvent], None] = _ignore,
) -> dict[str, Any]:
    """Follow qualification's ``next`` once: claim, describe, collect, upload, finalize.

    When ``next`` is ``collector_finalize`` it only finalizes; when it is anything but
    ``collector_claim`` it is a ``CONFLICT`` and nothing is claimed. The claimed descriptor is
    checked against the local authority in ``data_dir`` and the attempt's status is rechecked
    before anything runs; while the command runs the lease is renewed every third of it (at
    least :data:`~taskcore.limits.COLLECTOR_RENEW_MIN_MS` apart). A failed upload keeps the signed transfer and says to
    retry the upload. Returns the summary ``{"collected", "attempt_id", "record_outcome",
    "upload", "qualification", "elapsed_ms", "command_ms"}`` (``{"collected": false,
    "upload": null, "qualification"}`` when it only finalized).
    """
    started = time.monotonic()
    answer = qualification(client, repository=repository, profile=profile, change=change)
    step = answer["next"]
    if step["operation"] == "collector_finalize":
        final = finalize_if_ready(
            client, repository=repository, profile=profile, change=change, notify=notify
        )
        return {"collected": False, "upload": None, "qualification": final}
    if step["operation"] != "collector_claim":
        raise TaskError(
            ErrorCode.CONFLICT,
            f"nothing to collect: qualification says next is {step['operation']!r}"
            + (f" for task {step['task_id']}" if "task_id" in step else ""),
            details={"next": step},
        )
    task = next(t for t in answer["tasks"] if t["task_id"] == step["task_id"])
    check_before_claim(
        data_dir, repository=repository, profile=profile, step_id=task["step_id"], state=state
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
    handle = {
        "version": 1,
        "task_id": claimed["task_id"],
        "task_digest": claimed["task_digest"],
        "attempt_id": attempt_id,
    }
    raw = _result(client.workflow(repository, profile, "collector_descriptor", _body(handle)))
    descriptor = default_codec().structure(raw, CollectorDescriptor)
    descriptor.check()
    work_tree = check_local_authority(descriptor, data_dir, change)
    status = _result(client.workflow(repository, profile, "status", _body(handle)))
    if not status["currently_applicable"]:
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the attempt is {status['state']} and no longer applicable; nothing was run",
        )
    notify(Collecting(commit=descriptor.binding.commit, argv=descriptor.profile.recipe.argv))

    def heartbeat() -> None:
        client.workflow(
            repository,
            profile,
            "heartbeat",
            _body(
                {
                    "version": 1,
                    "request_id": "beat-" + secrets.token_hex(12),
                    "action": "heartbeat",
                    "task_id": claimed["task_id"],
                    "task_digest": claimed["task_digest"],
                    "attempt_id": attempt_id,
                    "attempt_digest": claimed["attempt_digest"],
                    "execution_operation_id": attempt["execution_operation_id"],
                    "executor": attempt["executor"],
                    "fence": attempt["fence"],
                    "reason": None,
                }
            ),
        )

    result = collect_command(
        descriptor,
        state=state,
        repository=work_tree,
        progress=_ticker(notify, heartbeat, max(attempt["lease_ms"] // 3, COLLECTOR_RENEW_MIN_MS)),
    )
    record = result.record
    if record is not None:
        notify(Recorded(record=record))
    notify(Uploading())
    try:
        upload = upload_retained(client, result.attempt, repository, profile)
    except TaskError as err:
        raise TaskError(
            err.code,
            f"{err.message}; the signed transfer is retained, run 'agent-task retry-upload'",
            details=err.details,
        ) from None
    final = finalize_if_ready(
        client, repository=repository, profile=profile, change=change, notify=notify
    )
    return {
        "collected": True,
        "attempt_id": attempt_id,
        "record_outcome": upload["record_outcome"],
        "upload": upload,
        "qualification": final,
        "elapsed_ms": int((time.monotonic() - started) * 1000),
        "command_ms": None if record is None else record.duration_ms,
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
