"""``agent-task gate``: the done gate from the command line, and ``agent-task gate-stop``.

* ``agent-task gate --transcript PATH | --session ID | --cwd DIR [--json]`` prints where that
  session stands (the receipt, or with ``--json`` exactly the ``session_gate`` object). A
  local user may name any transcript they can read.
* ``agent-task gate index`` scans the Claude Code and Codex roots into the local index
  (reading only bytes appended since the last scan); ``agent-task gate stats`` prints the
  firing rate by adapter, by repository and by main/subagent, each with its n.
* ``agent-task gate install|uninstall --harness claude-code|codex --scope project|user``
  writes or removes the Stop hook in that harness's settings file.
* ``agent-task gate-stop --harness claude-code|codex [--subagent]`` is the hook itself (the
  ``agent-task`` entry point dispatches it before loading any other command, so it starts
  without the HTTP or MCP stack).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import click
from taskcore.donegate.config import HARNESSES, GateConfig
from taskcore.donegate.index import GateIndex
from taskcore.donegate.installer import install, uninstall
from taskcore.donegate.session_gate import SessionGateIn, session_gate
from taskcore.donegate.stats import firing_rates, render_table

from taskcli.common import emit, json_option, run

__all__ = ["register"]

_index_option = click.option(
    "--index",
    "index_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The gate index file (default: $AGENT_TASK_GATE_INDEX or the user data directory).",
)


def _config(index_path: Path | None) -> GateConfig:
    return GateConfig.from_env(index_path=index_path)


@click.group("gate", invoke_without_command=True)
@click.option(
    "--transcript",
    type=click.Path(path_type=Path),
    default=None,
    help="A Claude Code or Codex transcript (.jsonl).",
)
@click.option("--session", "session_id", default=None, help="A session id from the index.")
@click.option(
    "--cwd",
    "cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A directory: the latest indexed session of its repository.",
)
@_index_option
@json_option
@click.pass_context
def gate(
    ctx: click.Context,
    transcript: Path | None,
    session_id: str | None,
    cwd: Path | None,
    index_path: Path | None,
    as_json: bool,
) -> None:
    """The done gate: where a coding-agent session stands on the evidence ladder.

    It never calls a model, never runs a command and never edits a file but its own index.
    """
    if ctx.invoked_subcommand is not None:
        return
    if transcript is None and session_id is None and cwd is None:
        click.echo(ctx.get_help())
        return
    request = SessionGateIn(
        transcript_path=str(transcript) if transcript is not None else None,
        session_id=session_id,
        cwd=os.path.abspath(cwd) if cwd is not None else None,
    )
    ans = run(as_json, lambda: session_gate(request, config=_config(index_path)))
    result = ans.result
    if as_json:
        emit(
            {
                "rung": result.rung,
                "rung_name": result.rung_name,
                "below_line": result.below_line,
                "missing": result.missing,
                "receipt_lines": list(result.receipt_lines),
                "budget_left": result.budget_left,
                "stale": result.stale,
                "indexed": result.indexed,
            },
            True,
        )
        return
    click.echo("\n".join(result.receipt_lines))
    click.echo(
        f"\nbudget left for this prompt: {result.budget_left}   stale: "
        f"{'yes' if result.stale else 'no'}   indexed: "
        f"{'yes' if result.indexed else 'no'}"
    )


@gate.command("index")
@_index_option
@json_option
def index_cmd(index_path: Path | None, as_json: bool) -> None:
    """Scan the Claude Code and Codex roots into the local index (only new bytes are read)."""

    def work() -> dict[str, Any]:
        index = GateIndex(_config(index_path))
        try:
            report = index.scan()
            files, sessions = index.counts()
        finally:
            index.close()
        return {
            "files_seen": report.files_seen,
            "files_read": report.files_read,
            "bytes_read": report.bytes_read,
            "seconds": round(report.seconds, 3),
            "mb_per_s": round(report.mb_per_s, 1),
            "index_files": files,
            "index_sessions": sessions,
        }

    out = run(as_json, work)
    emit(
        out,
        as_json,
        lambda o: (
            f"read {o['files_read']} of {o['files_seen']} transcripts, "
            f"{o['bytes_read'] / 1e6:.1f} MB in {o['seconds']:.2f} s ({o['mb_per_s']} MB/s); "
            f"the index holds {o['index_files']} files and {o['index_sessions']} sessions"
        ),
    )


@gate.command("stats")
@click.option(
    "--since-days",
    type=click.IntRange(min=1),
    default=None,
    help="Only sessions active in the last N days.",
)
@_index_option
@json_option
def stats_cmd(since_days: int | None, index_path: Path | None, as_json: bool) -> None:
    """The firing rate (rung 1 or 2 among sessions that claimed something), with n."""

    def work() -> dict[str, Any]:
        index = GateIndex(_config(index_path))
        try:
            since = int(time.time() * 1000) - since_days * 86_400_000 if since_days else 0
            sessions = index.sessions(since_ms=since)
        finally:
            index.close()
        return {
            by: [r.to_json() for r in firing_rates(sessions, by=by)]
            for by in ("adapter", "repository", "kind")
        }

    out = run(as_json, work)
    if as_json:
        emit(out, True)
        return
    from taskcore.donegate.stats import StatsRow

    for by, title in (
        ("adapter", "adapter"),
        ("repository", "repository"),
        ("kind", "main/subagent"),
    ):
        rows = [StatsRow(**r) for r in out[by]]
        click.echo(render_table(rows, title))
        click.echo("")


def _executable() -> str:
    argv0 = Path(sys.argv[0])
    if argv0.name == "agent-task" and argv0.exists():
        return str(argv0.resolve())
    found = shutil.which("agent-task")
    return str(Path(found).resolve()) if found else "agent-task"


_harness_option = click.option("--harness", type=click.Choice(HARNESSES), required=True)
_scope_option = click.option("--scope", type=click.Choice(("project", "user")), required=True)
_project_option = click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The project for --scope project (default: the current directory).",
)


@gate.command("install")
@_harness_option
@_scope_option
@_project_option
@click.option("--subagent", is_flag=True, help="Also gate subagent stops (off by default).")
@json_option
def install_cmd(
    harness: str, scope: str, project_dir: Path | None, subagent: bool, as_json: bool
) -> None:
    """Write the Stop hook into the harness's settings file (idempotent)."""
    result = run(
        as_json,
        lambda: install(
            harness, scope, project_dir=project_dir, executable=_executable(), subagent=subagent
        ),
    )
    note = (
        ""
        if harness == "claude-code"
        else "; Codex asks you to review and trust a new hook: open /hooks in Codex"
    )
    emit(
        {"path": str(result.path), "changed": result.changed, "events": list(result.events)},
        as_json,
        lambda o: (
            f"{'wrote' if o['changed'] else 'already present in'} "
            f"{o['path']} ({', '.join(o['events'])}){note}"
        ),
    )


@gate.command("uninstall")
@_harness_option
@_scope_option
@_project_option
@json_option
def uninstall_cmd(harness: str, scope: str, project_dir: Path | None, as_json: bool) -> None:
    """Remove only the hook entries that 'gate install' writes."""
    result = run(as_json, lambda: uninstall(harness, scope, project_dir=project_dir))
    emit(
        {"path": str(result.path), "changed": result.changed, "events": list(result.events)},
        as_json,
        lambda o: (
            f"removed the gate from {o['path']} ({', '.join(o['events'])})"
            if o["changed"]
            else f"nothing of the gate in {o['path']}"
        ),
    )


@click.command(
    "gate-stop", context_settings={"ignore_unknown_options": True, "help_option_names": []}
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def gate_stop(args: tuple[str, ...]) -> None:
    """The done gate's Stop hook: --harness claude-code|codex [--subagent].

    Reads the Stop payload on stdin; always exits 0.
    """
    from taskcli.gate_stop import full_main as hook_main

    sys.exit(hook_main(list(args)))


def register(group: click.Group) -> None:
    """Add ``gate`` and ``gate-stop``."""
    group.add_command(gate)
    group.add_command(gate_stop)
