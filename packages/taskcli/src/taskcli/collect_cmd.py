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

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from taskcore import TaskError
from taskcore.collector.client import (
    Claiming,
    CollectEvent,
    Collecting,
    Finalizing,
    Recorded,
    RenewalFailed,
    Running,
    Uploading,
    checkpoint,
    clean_head,
    collect_once,
    qualification,
    retry_uploads,
)
from taskcore.collector.state import CollectorState
from taskcore.errors import ErrorCode
from taskcore.limits import LEASE_MAX_MS

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


def _route(repository: str | None, profile: str | None) -> tuple[str, str]:
    if not repository or not profile:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "give --repository and --profile (or AGENT_TASK_REPOSITORY and AGENT_TASK_PROFILE)",
        )
    return repository, profile


def _describe(event: CollectEvent) -> str:
    """The progress line ``collect`` prints on stderr for ``event``."""
    if isinstance(event, Claiming):
        return f"claiming {event.step_id} ({event.task_id[:20]}...)"
    if isinstance(event, Collecting):
        return f"collecting on {event.commit[:12]}: {' '.join(event.argv)[:200]}"
    if isinstance(event, Running):
        progress = event.progress
        return (
            f"  running... {progress.elapsed_ms / 1000:.0f} s, "
            f"{progress.output_bytes} bytes of output"
        )
    if isinstance(event, RenewalFailed):
        return f"  lease renewal failed ({event.error.code.value}); the run continues"
    if isinstance(event, Recorded):
        record = event.record
        return (
            f"  {record.outcome.value} (exit {record.exit_status}) in "
            f"{record.duration_ms / 1000:.1f} s; signed and retained"
        )
    if isinstance(event, Uploading):
        return "uploading ..."
    assert isinstance(event, Finalizing)
    return "finalizing the receipt ..."


def _printer(quiet: bool) -> Callable[[CollectEvent], None]:
    def notify(event: CollectEvent) -> None:
        if not quiet:
            click.echo(_describe(event), err=True)

    return notify


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
        head = clean_head(workspace)
        return checkpoint(
            ServiceClient(url, token_file),
            repository=repo,
            profile=prof,
            change=change,
            commit=head,
            context=context,
        )

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
            notify=_printer(quiet or as_json),
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
        return retry_uploads(
            ServiceClient(url, token_file, timeout=120.0),
            state,
            attempt_name=attempt_name,
            every=every,
        )

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
        return qualification(
            ServiceClient(url, token_file), repository=repo, profile=prof, change=change
        )

    emit(run(as_json, act), as_json)


def register(group: click.Group) -> None:
    """Add ``checkpoint``, ``collect``, ``retry-upload`` and ``qualification``."""
    for command in (checkpoint_command, collect_cmd, retry_upload_command, qualification_command):
        group.add_command(command)
