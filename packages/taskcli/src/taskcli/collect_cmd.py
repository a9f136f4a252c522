"""``agent-task checkpoint``, ``collect``, ``retry-upload`` and ``qualification``.

* ``checkpoint CHANGE`` records the subject of the work tree's HEAD (``--workspace``, default
  the current directory); a dirty work tree is refused before anything is sent.
* ``collect CHANGE`` follows ``qualification``'s ``next`` once: it claims the collector task
  (``collector_claim``), reads the server-derived descriptor, checks it against the local
  authority in ``--data-dir`` (repository path, collector profile digest, subject, audience),
  rechecks the attempt's status, runs the collection (snapshot, pinned recipe, record, sign,
  retain with fsync), uploads the retained bytes, finalizes when the record passed, and prints
  the outcome and the resulting qualification. It exits 0 when it durably collected and
  uploaded, a failed run included; it never loops claims and never falls back to anything.
* ``retry-upload`` resends the identical retained bytes of attempts whose upload did not
  complete (or ``--attempt`` one of them); reopening retained state never reruns a command.
* ``qualification CHANGE`` prints the read-only qualification answer.

Progress goes to stderr while the command runs; ``--json`` prints one JSON document.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import click
from taskcore import TaskError
from taskcore.authority.gitrev import work_tree_state
from taskcore.codec import default_codec
from taskcore.collector.collect import collect_command
from taskcore.collector.descriptor import CollectorDescriptor
from taskcore.collector.runtime import Progress
from taskcore.collector.state import AttemptState, CollectorState
from taskcore.errors import ErrorCode
from taskcore.limits import LEASE_MAX_MS
from taskcore.workflow.reads import open_reader

from taskcli.collector_cmd import state_dir_option
from taskcli.common import (
    ServiceClient,
    client_options,
    data_dir_option,
    emit,
    json_option,
    resolve_data_dir,
    route_options,
    run,
)

__all__ = ["register"]


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        click.echo(message, err=True)


def _body(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode("utf-8")


def _route(repository: str | None, profile: str | None) -> tuple[str, str]:
    if not repository or not profile:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "give --repository and --profile (or AGENT_TASK_REPOSITORY and AGENT_TASK_PROFILE)",
        )
    return repository, profile


# -- checkpoint ------------------------------------------------------------------------------------


@click.command("checkpoint")
@click.argument("change")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The git work tree whose HEAD is checkpointed.",
)
@click.option("--context", default="", help="Context text bound into the subject.")
@route_options
@client_options
@json_option
def checkpoint_command(
    change: str,
    workspace: Path,
    context: str,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
    as_json: bool,
) -> None:
    """Record CHANGE's subject at the current HEAD of a clean work tree."""

    def act() -> Any:
        repo, prof = _route(repository, profile)
        state = work_tree_state(workspace)
        if state.head is None:
            raise TaskError(ErrorCode.NOT_FOUND, "the work tree has no commit yet; commit first")
        if not state.clean:
            raise TaskError(
                ErrorCode.CONFLICT,
                f"the work tree has {state.changed_paths or 'untracked or'} uncommitted "
                "change(s); commit them, then checkpoint again",
            )
        answer = ServiceClient(url, token_file).workflow(
            repo,
            prof,
            "checkpoint",
            _body({"version": 1, "change_id": change, "commit": state.head, "context": context}),
        )
        return answer["result"]

    result = run(as_json, act)
    if as_json:
        emit(result, True)
    else:
        subject = result["subject"]
        verb = "recorded" if result["created"] else "unchanged"
        click.echo(
            f"{verb}: {subject['change_id']} version {subject['change_version']} at "
            f"{subject['commit'][:12]} (revision {subject['revision'][:16]}...)"
        )
        for task in result["tasks"]:
            click.echo(f"  {task['step_id']}: {task['state']} ({task['task_id'][:20]}...)")


# -- collect ---------------------------------------------------------------------------------------


def _check_local(descriptor: CollectorDescriptor, data_dir: Path, change: str) -> Path:
    """Recheck the descriptor against the local authority; return the repository's work tree."""
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


def _progress(
    quiet: bool,
    heartbeat: Any,
    every_ms: int,
) -> Any:
    """Print progress each second and renew the lease every ``every_ms`` while it runs."""
    last = [0]

    def tick(progress: Progress) -> None:
        if not quiet:
            click.echo(
                f"  running... {progress.elapsed_ms / 1000:.0f} s, "
                f"{progress.output_bytes} bytes of output",
                err=True,
            )
        if progress.elapsed_ms - last[0] >= every_ms:
            last[0] = progress.elapsed_ms
            try:
                heartbeat()
            except TaskError as err:
                # The run continues; the authority judges the upload on its own rules.
                _say(f"  lease renewal failed ({err.code.value}); the run continues", quiet)

    return tick


def _upload(
    client: ServiceClient, attempt: AttemptState, repository: str, profile: str
) -> dict[str, Any]:
    envelope = attempt.read_transfer()
    answer = client.upload(repository, profile, envelope)
    result: dict[str, Any] = answer["result"]
    attempt.write_json(attempt.upload_path, result)
    return result


def _finalize_if_ready(
    client: ServiceClient, repository: str, profile: str, change: str, quiet: bool
) -> dict[str, Any]:
    qualification: dict[str, Any] = client.workflow(
        repository, profile, "qualification", _body({"version": 1, "change_id": change})
    )["result"]
    if qualification["next"]["operation"] == "collector_finalize":
        _say("finalizing the receipt ...", quiet)
        client.workflow(
            repository, profile, "collector_finalize", _body({"version": 1, "change_id": change})
        )
        qualification = client.workflow(
            repository, profile, "qualification", _body({"version": 1, "change_id": change})
        )["result"]
    return qualification


def collect_once(
    client: ServiceClient,
    *,
    repository: str,
    profile: str,
    change: str,
    data_dir: Path,
    state: CollectorState,
    lease_ms: int,
    quiet: bool,
) -> dict[str, Any]:
    """Follow ``next`` once: claim, describe, collect, upload, finalize. Return a summary."""
    started = time.monotonic()
    qualification = client.workflow(
        repository, profile, "qualification", _body({"version": 1, "change_id": change})
    )["result"]
    step = qualification["next"]
    if step["operation"] == "collector_finalize":
        final = _finalize_if_ready(client, repository, profile, change, quiet)
        return {"collected": False, "upload": None, "qualification": final}
    if step["operation"] != "collector_claim":
        raise TaskError(
            ErrorCode.CONFLICT,
            f"nothing to collect: qualification says next is {step['operation']!r}"
            + (f" for task {step['task_id']}" if "task_id" in step else ""),
            details={"next": step},
        )
    task = next(t for t in qualification["tasks"] if t["task_id"] == step["task_id"])
    _say(f"claiming {task['step_id']} ({task['task_id'][:20]}...)", quiet)
    claimed = client.workflow(
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
    )["result"]
    attempt_id = claimed["attempt"]["attempt_id"]
    raw = client.workflow(
        repository,
        profile,
        "collector_descriptor",
        _body(
            {
                "version": 1,
                "task_id": claimed["task_id"],
                "task_digest": claimed["task_digest"],
                "attempt_id": attempt_id,
            }
        ),
    )["result"]
    descriptor = default_codec().structure(raw, CollectorDescriptor)
    descriptor.check()
    work_tree = _check_local(descriptor, data_dir, change)
    status = client.workflow(
        repository,
        profile,
        "status",
        _body(
            {
                "version": 1,
                "task_id": claimed["task_id"],
                "task_digest": claimed["task_digest"],
                "attempt_id": attempt_id,
            }
        ),
    )["result"]
    if not status["currently_applicable"]:
        raise TaskError(
            ErrorCode.CONFLICT,
            f"the attempt is {status['state']} and no longer applicable; nothing was run",
        )
    recipe = descriptor.profile.recipe
    _say(f"collecting on {descriptor.binding.commit[:12]}: {' '.join(recipe.argv)[:200]}", quiet)
    attempt = claimed["attempt"]

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
        progress=_progress(quiet, heartbeat, max(attempt["lease_ms"] // 3, 1000)),
    )
    record = result.record
    if record is not None:
        _say(
            f"  {record.outcome.value} (exit {record.exit_status}) in "
            f"{record.duration_ms / 1000:.1f} s; signed and retained",
            quiet,
        )
    _say("uploading ...", quiet)
    try:
        upload = _upload(client, result.attempt, repository, profile)
    except TaskError as err:
        raise TaskError(
            err.code,
            f"{err.message}; the signed transfer is retained, run 'agent-task retry-upload'",
            details=err.details,
        ) from None
    final = _finalize_if_ready(client, repository, profile, change, quiet)
    return {
        "collected": True,
        "attempt_id": attempt_id,
        "record_outcome": upload["record_outcome"],
        "upload": upload,
        "qualification": final,
        "elapsed_ms": int((time.monotonic() - started) * 1000),
        "command_ms": None if record is None else record.duration_ms,
    }


def _summary(result: dict[str, Any]) -> str:
    q = result["qualification"]
    lines = []
    if result.get("collected"):
        lines.append(f"collected: {result['record_outcome']} (uploaded)")
    lines.append(f"qualified: {str(q['qualified']).lower()}")
    for failure in q["failures"]:
        lines.append(f"  failure: {failure['code']} ({failure['task_id'][:20]}...)")
    lines.append(f"next: {q['next']['operation']}")
    return "\n".join(lines)


@click.command("collect")
@click.argument("change")
@click.option(
    "--lease-ms",
    type=click.IntRange(1000, LEASE_MAX_MS),
    default=30 * 60 * 1000,
    show_default=True,
    help="Lease to request for the collector attempt.",
)
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@route_options
@client_options
@data_dir_option
@state_dir_option
@json_option
def collect_cmd(
    change: str,
    lease_ms: int,
    quiet: bool,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
    data_dir: Path | None,
    state_dir: Path | None,
    as_json: bool,
) -> None:
    """Collect CHANGE's next collector task once: claim, run, sign, retain, upload, finalize.

    Exits 0 after a durable collection and upload, whether the command passed or failed; the
    outcome is in the printed qualification.
    """

    def act() -> dict[str, Any]:
        repo, prof = _route(repository, profile)
        state = CollectorState.open(state_dir)
        return collect_once(
            ServiceClient(url, token_file, timeout=120.0),
            repository=repo,
            profile=prof,
            change=change,
            data_dir=resolve_data_dir(data_dir),
            state=state,
            lease_ms=lease_ms,
            quiet=quiet or as_json,
        )

    result = run(as_json, act)
    emit(result, as_json, _summary)


# -- retry-upload ----------------------------------------------------------------------------------


@click.command("retry-upload")
@click.option("--attempt", "attempt_name", default=None, help="One attempt directory (64 hex).")
@click.option("--all", "every", is_flag=True, help="Also resend attempts already uploaded.")
@client_options
@state_dir_option
@json_option
def retry_upload_command(
    attempt_name: str | None,
    every: bool,
    url: str,
    token_file: Path | None,
    state_dir: Path | None,
    as_json: bool,
) -> None:
    """Resend the identical retained signed bytes (never reruns a command).

    By default every retained transfer whose upload did not complete is sent; an exact retry
    of an imported transfer returns the authority's historical view.
    """

    def act() -> list[dict[str, Any]]:
        state = CollectorState.open(state_dir)
        client = ServiceClient(url, token_file, timeout=120.0)
        attempts = (
            [state.attempt(attempt_name)] if attempt_name is not None else list(state.attempts())
        )
        out = []
        for attempt in attempts:
            if not attempt.has_transfer():
                continue
            if attempt_name is None and not every and attempt.read_json(attempt.upload_path):
                continue
            descriptor = attempt.read_json(attempt.descriptor_path) or {}
            binding = descriptor.get("binding") or {}
            repo, prof = binding.get("repository_id"), binding.get("workflow_profile_id")
            if not isinstance(repo, str) or not isinstance(prof, str):
                raise TaskError(
                    ErrorCode.INTEGRITY_FAILURE,
                    f"attempt {attempt.path.name} has no readable descriptor",
                )
            view = _upload(client, attempt, repo, prof)
            out.append({"attempt": attempt.path.name, **view})
        return out

    emit(run(as_json, act), as_json)


# -- qualification ---------------------------------------------------------------------------------


@click.command("qualification")
@click.argument("change")
@route_options
@client_options
@json_option
def qualification_command(
    change: str,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
    as_json: bool,
) -> None:
    """Print whether CHANGE's current subject is qualified (read-only, advisory)."""

    def act() -> dict[str, Any]:
        repo, prof = _route(repository, profile)
        answer: dict[str, Any] = ServiceClient(url, token_file).workflow(
            repo, prof, "qualification", _body({"version": 1, "change_id": change})
        )["result"]
        return answer

    emit(run(as_json, act), as_json)


def register(group: click.Group) -> None:
    """Add ``checkpoint``, ``collect``, ``retry-upload`` and ``qualification``."""
    for command in (checkpoint_command, collect_cmd, retry_upload_command, qualification_command):
        group.add_command(command)
