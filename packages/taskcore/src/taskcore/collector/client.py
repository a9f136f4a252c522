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
callback; printing them is the caller's business. The protocol, the events and the
single calls are :mod:`taskcore.collector.client_calls`, the checks around a claim
:mod:`taskcore.collector.client_checks`; this module re-exports their names.

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
import secrets
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from taskcore.authority.gitrev import work_tree_state
from taskcore.codec import default_codec
from taskcore.collector.client_calls import (
    TRANSIENT_KINDS,
    Checking,
    Claimed,
    Claiming,
    CollectEvent,
    Collecting,
    Finalizing,
    Recorded,
    Released,
    RenewalFailed,
    Running,
    Uploading,
    WorkflowClient,
    advice_of,
    finalize_if_ready,
    ignore_event,
    mutation_body,
    qualification,
    release_attempt,
    renewing_ticker,
    request_body,
    result_of,
    upload_retained,
)
from taskcore.collector.client_checks import (
    RemoteSubject,
    check_before_claim,
    check_before_claim_remote,
    check_local_authority,
    check_remote_descriptor,
)
from taskcore.collector.collect import collect_command
from taskcore.collector.nextstep import CommandOptions, advise
from taskcore.collector.state import CollectorState
from taskcore.contract.collector_descriptor import CollectorDescriptor
from taskcore.contract.collector_wire import run_summary
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import COLLECTOR_RENEW_MIN_MS

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
    answer: dict[str, Any] = result_of(
        client.workflow(repository, profile, "checkpoint", request_body(body))
    )
    return answer


def collect_once(
    client: WorkflowClient,
    *,
    repository: str,
    profile: str,
    change: str,
    data_dir: Path | None = None,
    state: CollectorState,
    lease_ms: int,
    notify: Callable[[CollectEvent], None] = ignore_event,
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
    "qualification", "next_command", "next_action", "elapsed_ms", "command_ms"}``
    (``{"collected": false, "upload": null, "qualification", "next_command", "next_action"}``
    when it only finalized); ``next_action`` is the advice's fixed sentence.
    """
    started = time.monotonic()
    options = options or CommandOptions()
    answer = qualification(client, repository=repository, profile=profile, change=change)
    step = answer["next"]
    if step["operation"] == "collector_finalize":
        final = finalize_if_ready(
            client, repository=repository, profile=profile, change=change, notify=notify
        )
        advice = advice_of(final, change, options)
        return {
            "collected": False,
            "upload": None,
            "qualification": final,
            "next_command": advice.command,
            "next_action": advice.sentence,
        }
    if step["operation"] != "collector_claim":
        advice = advice_of(answer, change, options)
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
    claimed = result_of(
        client.workflow(
            repository,
            profile,
            "collector_claim",
            request_body(
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
        raw = result_of(
            client.workflow(repository, profile, "collector_descriptor", request_body(handle))
        )
        descriptor = default_codec().structure(raw, CollectorDescriptor)
        descriptor.check()
        if remote is not None:
            check_remote_descriptor(descriptor, remote, repository=repository, profile=profile)
        else:
            assert data_dir is not None
            work_tree = check_local_authority(descriptor, data_dir, change)
        status = result_of(client.workflow(repository, profile, "status", request_body(handle)))
        if not status["currently_applicable"]:
            raise TaskError(
                ErrorCode.CONFLICT,
                f"the attempt is {status['state']} and no longer applicable; nothing was run",
            )
        notify(Collecting(commit=descriptor.binding.commit, argv=descriptor.profile.recipe.argv))

        def heartbeat() -> None:
            client.workflow(
                repository, profile, "heartbeat", mutation_body(claimed, "heartbeat", None)
            )

        result = collect_command(
            descriptor,
            state=state,
            repository=work_tree,
            progress=renewing_ticker(
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
        if err.code.kind in TRANSIENT_KINDS:
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
    advice = advice_of(final, change, options)
    return {
        "collected": True,
        "attempt_id": attempt_id,
        "record_outcome": upload["record_outcome"],
        "run": run,
        "upload": upload,
        "qualification": final,
        "next_command": advice.command,
        "next_action": advice.sentence,
        "elapsed_ms": int((time.monotonic() - started) * 1000),
        "command_ms": None if record is None else record.duration_ms,
    }


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
        advice = advice_of(answer, change, options)
        raise TaskError(
            ErrorCode.CONFLICT,
            f"nothing to reconcile: qualification says next is {step['operation']!r}"
            + (f"; run: {advice.command}" if advice.command else f". {advice.sentence}"),
            details={"next": step, "next_command": advice.command},
        )
    view = result_of(
        client.workflow(
            repository, profile, "task", request_body({"version": 1, "task_id": target})
        )
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
                if err.code.kind in TRANSIENT_KINDS:
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
                    "next_command": advice_of(final, change, options).command,
                }
    claimed = {
        "task_id": current["task_id"],
        "task_digest": current["task_digest"],
        "attempt": current["attempt"],
        "attempt_digest": current["attempt_digest"],
    }
    outcome = result_of(
        client.workflow(
            repository, profile, "reconcile", mutation_body(claimed, "reconcile", reason)
        )
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
        "next_command": advice_of(final, change, options).command,
    }


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
