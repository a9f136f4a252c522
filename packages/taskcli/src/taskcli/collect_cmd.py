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
* ``qualification CHANGE`` prints the read-only qualification answer (for people: why a run
  failed and the command that acts on ``next``).
* ``reconcile CHANGE`` finds and reconciles the attempt that keeps the Change from being
  collected (qualification's ``next: reconcile``; ``--force`` for a live attempt whose
  collection died).

Progress goes to stderr while the command runs; ``--json`` prints one JSON document.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import click
from taskcore import TaskError
from taskcore.collector.client import (
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
    checkpoint,
    clean_head,
    collect_once,
    qualification,
    reconcile_change,
    retry_uploads,
)
from taskcore.collector.nextstep import CommandOptions, advise
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

__all__ = ["NOT_QUALIFIED_EXIT", "register"]

NOT_QUALIFIED_EXIT = 1
"""``agent-task qualification``'s exit status for an answer that is not qualified."""


def _route(repository: str | None, profile: str | None) -> tuple[str, str]:
    if not repository or not profile:
        raise TaskError(
            ErrorCode.BAD_INPUT,
            "give --repository and --profile (or AGENT_TASK_REPOSITORY and AGENT_TASK_PROFILE)",
        )
    return repository, profile


def _options(
    url: str,
    repository: str | None,
    profile: str | None,
    token_file: Path | None,
    data_dir: Path | None = None,
    state_dir: Path | None = None,
) -> CommandOptions:
    """The values printed commands fill in: what this command was given."""
    return CommandOptions(
        url=url,
        repository=repository,
        profile=profile,
        token_file=None if token_file is None else str(token_file.absolute()),
        data_dir=None if data_dir is None else str(data_dir.absolute()),
        state_dir=None if state_dir is None else str(state_dir.absolute()),
    )


def _describe(event: CollectEvent) -> str:
    """The progress line ``collect`` prints on stderr for ``event``."""
    if isinstance(event, Checking):
        return f"checking {event.step_id} locally before claiming ..."
    if isinstance(event, Claiming):
        return f"claiming {event.step_id} ({event.task_id[:20]}...)"
    if isinstance(event, Claimed):
        return f"  claimed attempt {event.attempt_id}"
    if isinstance(event, Released):
        return f"  released attempt {event.attempt_id} after {event.error}"
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
@click.option(
    "--retry",
    is_flag=True,
    help="Record the same commit again as a new version when its run failed or no longer "
    "counts (e.g. after the operator fixed the collector profile), so it can be collected again.",
)
@route_options
@client_options
@json_option
def checkpoint_command(
    change: str,
    workspace: Path,
    context: str,
    retry: bool,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
    as_json: bool,
) -> None:
    """Record CHANGE's subject at the current HEAD of a clean work tree.

    The same commit and context give the same subject ('unchanged'): the revision is a digest
    of the content. To collect the same revision again after a failed run or a changed
    collector profile, use --retry.
    """

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
            retry=retry,
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
        if not result["created"]:
            click.echo(
                "  the same content and context give the same subject; after a failed run or "
                "a changed collector profile, 'agent-task checkpoint "
                f"{change} --retry' records it again"
            )


# -- collect ---------------------------------------------------------------------------------------


def _run_lines(run: dict[str, Any]) -> list[str]:
    """A failed run for people: what ran, how it ended, the end of its output."""
    status = (
        f"exit {run['exit_status']}"
        if run["exit_status"] is not None
        else f"signal {run['signal']}"
    )
    lines = [f"  {run['step_id']}: {run['argv0']} {run['outcome']} ({status})"]
    for name in ("stdout", "stderr"):
        tail = run[f"{name}_tail"].rstrip()
        if tail:
            lines.append(f"  {name} tail:")
            lines += ["    " + line for line in tail.splitlines()[-15:]]
    return lines


def _qualification_lines(q: dict[str, Any], next_command: str | None) -> list[str]:
    lines = [f"qualified: {str(q['qualified']).lower()}"]
    for failure in q["failures"]:
        lines.append(f"  failure: {failure['code']} ({failure['task_id'][:20]}...)")
    for failed in q.get("run_failures", []):
        lines += _run_lines(failed)
    lines.append(f"next: {q['next']['operation']}")
    if next_command:
        lines.append(f"run: {next_command}")
    return lines


def _summary(result: dict[str, Any]) -> str:
    lines = []
    if result.get("collected"):
        lines.append(
            f"collected: {result['record_outcome']} (attempt {result['attempt_id']}, uploaded)"
        )
        run = result.get("run")
        if run is not None and run["outcome"] != "passed":
            lines += _run_lines(run)
    q = result["qualification"]
    if result.get("collected") and q.get("run_failures"):
        q = {**q, "run_failures": []}  # already shown above
    lines += _qualification_lines(q, result.get("next_command"))
    if result.get("next_command") is None and not q["qualified"] and result.get("next_action"):
        lines.append(result["next_action"])
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
@click.option(
    "--clone",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Remote mode: a git clone of the repository on this machine. The collector needs no "
    "data dir: it verifies the descriptor with the authority key it pinned "
    "('agent-task collector pin-authority') and runs on the clone.",
)
@route_options
@client_options
@data_dir_option
@state_dir_option
@json_option
def collect_cmd(
    change: str,
    lease_ms: int,
    quiet: bool,
    clone: Path | None,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
    data_dir: Path | None,
    state_dir: Path | None,
    as_json: bool,
) -> None:
    """Collect CHANGE's next collector task once: check, claim, run, sign, retain, upload, finalize.

    Same host: the descriptor is rechecked against the service's own data dir (--data-dir or
    AGENT_TASK_DATA_DIR). Elsewhere: --clone PATH, with the authority key pinned once
    ('agent-task collector pin-authority'). Every local check runs before the claim. A
    failure after the claim releases the attempt
    in the same command (the Change can be collected again) and prints the command to run.
    Exits 0 after a durable collection and upload, whether the command passed or failed; the
    outcome, the failed run's output tail and the next command are printed.
    """

    def act() -> dict[str, Any]:
        repo, prof = _route(repository, profile)
        if clone is not None and data_dir is not None:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                "give --data-dir (the service's own, same host) or --clone (remote), not both",
            )
        state = CollectorState.open(state_dir)
        options = _options(url, repo, prof, token_file, data_dir, state_dir)
        if clone is not None:
            options = attrs.evolve(options, clone=str(clone.absolute()), data_dir=None)
        return collect_once(
            ServiceClient(url, token_file, timeout=120.0),
            repository=repo,
            profile=prof,
            change=change,
            data_dir=None if clone is not None else resolve_data_dir(data_dir),
            clone=None if clone is None else clone.absolute(),
            state=state,
            lease_ms=lease_ms,
            notify=_printer(quiet or as_json),
            options=options,
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
    """Print whether CHANGE's current subject is qualified (read-only, advisory).

    People also get why a collected run failed (its output tail) and the command that acts on
    ``next``, and the exit status says it: 0 qualified, 1 not qualified (so 'agent-task
    qualification C && ...' reads as it should); a refusal exits with its error's status.
    ``--json`` prints the answer as the service gave it and exits 0 whenever it got one:
    programs read ``qualified``.
    """
    options = _options(url, repository, profile, token_file)

    def act() -> dict[str, Any]:
        repo, prof = _route(repository, profile)
        return qualification(
            ServiceClient(url, token_file), repository=repo, profile=prof, change=change
        )

    def render(answer: dict[str, Any]) -> str:
        advice = advise(
            answer["next"],
            answer["failures"],
            change=change,
            options=options,
            qualified=answer["qualified"],
            run_failures=answer.get("run_failures", ()),
        )
        head = [f"subject_current: {str(answer['subject_current']).lower()}"]
        if answer["revision"]:
            head.append(f"revision: {answer['revision']}")
        if answer["receipt_digest"]:
            head.append(f"receipt: {answer['receipt_digest']}")
        for task in answer["tasks"]:
            head.append(f"  {task['step_id']}: {task['state']} ({task['task_id'][:20]}...)")
        body = _qualification_lines(answer, advice.command)
        if advice.command is None and not answer["qualified"]:
            body.append(advice.sentence)
        return "\n".join(head + body)

    answer = run(as_json, act)
    emit(answer, as_json, render)
    if not as_json and not answer["qualified"]:
        sys.exit(NOT_QUALIFIED_EXIT)


# -- reconcile -------------------------------------------------------------------------------------


@click.command("reconcile")
@click.argument("change")
@click.option(
    "--force",
    is_flag=True,
    help="Also reconcile an attempt whose lease is still live (a collection that died).",
)
@click.option(
    "--reason",
    default="reconciled with 'agent-task reconcile'",
    show_default=True,
    help="One line for the audit.",
)
@route_options
@client_options
@state_dir_option
@json_option
def reconcile_command(
    change: str,
    force: bool,
    reason: str,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
    state_dir: Path | None,
    as_json: bool,
) -> None:
    """Reconcile the attempt that keeps CHANGE from being collected (it finds the attempt).

    Use it when qualification says next: reconcile (an expired or cancelled attempt, or an
    unresolved attempt of an older subject), or with --force for a live attempt whose
    collection died. The task becomes claimable again; run 'agent-task collect CHANGE'. If this
    collector (--state-dir) retained a signed transfer of that attempt that never reached the
    service, it is uploaded instead of thrown away.
    """
    options = _options(url, repository, profile, token_file)

    def act() -> dict[str, Any]:
        repo, prof = _route(repository, profile)
        try:
            state: CollectorState | None = CollectorState.open(state_dir)
        except TaskError:
            state = None  # no collector state here: nothing retained to upload
        return reconcile_change(
            ServiceClient(url, token_file),
            repository=repo,
            profile=prof,
            change=change,
            force=force,
            reason=reason,
            options=options,
            state=state,
        )

    def render(result: dict[str, Any]) -> str:
        done = result["reconciled"]
        if done is None:
            sent = result["uploaded"]
            lines = [
                f"uploaded the retained transfer of attempt {sent['attempt_id']} instead of "
                f"reconciling it: {sent['record_outcome']}"
            ]
        else:
            lines = [
                f"reconciled: attempt {done['attempt_id']} of task {done['task_id'][:20]}... "
                f"(fence {done['fence']} superseded by {done['new_fence']})"
            ]
        lines += _qualification_lines(result["qualification"], result["next_command"])
        return "\n".join(lines)

    emit(run(as_json, act), as_json, render)


def register(group: click.Group) -> None:
    """Add ``checkpoint``, ``collect``, ``retry-upload``, ``qualification`` and ``reconcile``."""
    for command in (
        checkpoint_command,
        collect_cmd,
        retry_upload_command,
        qualification_command,
        reconcile_command,
    ):
        group.add_command(command)
