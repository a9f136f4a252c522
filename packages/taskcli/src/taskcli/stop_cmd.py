"""``agent-task task-stop``, ``task-codex-stop``, ``install-stop`` and ``init-repo``.

The two Stop hooks are read-only. They take ``CHANGE --endpoint URL --repository R
--profile ID --token-file ABS_PATH --workspace PATH`` (and ``--data-dir``, the local
authority), read the harness's Stop payload from stdin and run
:func:`taskcore.collector.stophook.run_hook`: pass (print nothing, exit 0) only if the
Change's current subject is qualified and the clean workspace is at its revision; otherwise
block in the harness's Stop-hook format (Claude Code ``hookSpecificOutput.additionalContext``,
Codex ``decision: block``) with the typed failures, a fixed next_action sentence and
``next``. A malformed payload or an unreadable counter exits 1, which does not block. The
qualification call goes over HTTP (:class:`taskcli.common.ServiceClient`). The ``agent-task``
script runs :mod:`taskcli.task_stop` first (a pass without click or the storage layer), which
comes here, or to :func:`finish`, for everything else.

``install-stop`` writes one of these hooks into the settings file you name (and nothing
else, never by itself); ``init-repo`` writes the managed "Workflow tasks" block into
AGENTS.md, the Cursor rules and the Copilot instructions, replacing only its own block
(:mod:`taskcore.collector.instructions`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click
from taskcore.collector.stophook import (
    CLAUDE_CODE,
    CODEX,
    HOOK_COMMANDS,
    Connect,
    install_stop_hook,
    run_hook,
    settings_advice,
)

from taskcli.common import ServiceClient, database_option, emit, resolve_data_dir, run

__all__ = ["finish", "register"]


def _connect(endpoint: str) -> Connect:
    """Clients of the service at ``endpoint`` over HTTP."""

    def connect(token_file: Path, timeout: float) -> ServiceClient:
        return ServiceClient(endpoint, token_file, timeout=timeout)

    return connect


def finish(status: int, text: str) -> NoReturn:
    """Print a hook run's answer as the command does and exit with its status."""
    if text:
        click.echo(text)
    if status:
        click.echo("agent-task task-stop: unreadable Stop payload or counter", err=True)
    sys.exit(status)


def _hook_command(name: str, harness: str) -> click.Command:
    @click.command(name)
    @click.argument("change")
    @click.option("--endpoint", required=True, help="Service base URL.")
    @click.option("--repository", required=True, help="Repository ID.")
    @click.option("--profile", required=True, help="Workflow profile ID.")
    @click.option(
        "--token-file", required=True, type=click.Path(path_type=Path), help="Absolute path."
    )
    @click.option(
        "--workspace", required=True, type=click.Path(path_type=Path), help="The work tree."
    )
    @click.option(
        "--data-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="The local authority's data dir (opened read-only).",
    )
    @database_option
    def command(
        change: str,
        endpoint: str,
        repository: str,
        profile: str,
        token_file: Path,
        workspace: Path,
        data_dir: Path | None,
    ) -> None:
        status, text = run_hook(
            harness,
            change=change,
            repository=repository,
            profile=profile,
            token_file=token_file,
            workspace=workspace,
            data_dir=resolve_data_dir(data_dir),
            stdin=sys.stdin.buffer,
            connect=_connect(endpoint),
            endpoint=endpoint,
        )
        finish(status, text)

    command.help = (
        f"Read-only {'Codex' if harness == CODEX else 'Claude Code'} Stop hook: pass only if "
        "CHANGE's current subject is qualified and the clean workspace is at its revision."
    )
    return command


# -- install-stop ------------------------------------------------------------------------------


def _agent_task_executable() -> str:
    candidate = Path(sys.argv[0])
    if candidate.name == "agent-task" and candidate.exists():
        return str(candidate.resolve())
    return "agent-task"


@click.command("install-stop")
@click.argument("change")
@click.option("--harness", type=click.Choice([CLAUDE_CODE, CODEX]), required=True)
@click.option(
    "--settings",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The settings file to write (.claude/settings.json, ~/.codex/hooks.json, ...).",
)
@click.option("--endpoint", required=True)
@click.option("--repository", required=True)
@click.option("--profile", required=True)
@click.option(
    "--token-file",
    required=True,
    type=click.Path(path_type=Path),
    help="The agent's token file: an absolute path outside the work tree.",
)
@click.option("--workspace", required=True, type=click.Path(path_type=Path), help="The work tree.")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="The local authority's data dir (default $AGENT_TASK_DATA_DIR).",
)
def install_stop_command(
    change: str,
    harness: str,
    settings: Path,
    endpoint: str,
    repository: str,
    profile: str,
    token_file: Path,
    workspace: Path,
    data_dir: Path | None,
) -> None:
    """Write the task-stop hook for CHANGE into the settings file you name (only there)."""

    def act() -> str:
        return install_stop_hook(
            settings,
            harness,
            executable=_agent_task_executable(),
            change=change,
            endpoint=endpoint,
            repository=repository,
            profile=profile,
            token_file=token_file,
            workspace=workspace,
            data_dir=resolve_data_dir(data_dir),
        )

    command = run(False, act)
    click.echo(f"installed the {harness} Stop hook in {settings}:")
    click.echo(f"  {command}")
    for line in settings_advice(settings, harness, workspace):
        click.echo(line)
    click.echo(
        "instructions: the 'Workflow tasks' block ('agent-task init-repo') tells the agent how "
        "to discover, collect and qualify before it finishes"
    )


# -- init-repo ---------------------------------------------------------------------------------


@click.command("init-repo")
@click.option(
    "--path",
    "root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The repository root.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
def init_repo_command(root: Path, as_json: bool) -> None:
    """Write the managed 'Workflow tasks' block into the instruction files.

    AGENTS.md, .cursor/rules/agent-task.mdc and .github/copilot-instructions.md; re-running
    replaces only that block and leaves other content alone.
    """
    from taskcore.collector.instructions import write_instruction_files

    emit(
        {"files": write_instruction_files(root)},
        as_json,
        lambda v: "\n".join(f"{'wrote' if c else 'unchanged'} {n}" for n, c in v["files"].items()),
    )


def register(group: click.Group) -> None:
    """Add ``task-stop``, ``task-codex-stop``, ``install-stop`` and ``init-repo``."""
    for harness, name in HOOK_COMMANDS.items():
        group.add_command(_hook_command(name, harness))
    group.add_command(install_stop_command)
    group.add_command(init_repo_command)
