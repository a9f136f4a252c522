"""The ``agent-task`` command: one click group; each feature module adds its commands.

Every command module exposes ``register(group: click.Group) -> None``. Exit statuses come
from the one ErrorCode -> exit table in taskcore (:attr:`taskcore.ErrorKind.exit_status`);
``--help`` prints that table (:func:`taskcli.common.exit_table`).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from taskcli.common import database_option, exit_table, set_global_data_dir

__all__ = ["cli", "load_commands", "main"]

# Modules under taskcli that add commands, in help order.
_COMMAND_MODULES: tuple[str, ...] = (
    "serve_cmd",
    "admin_cmd",
    "call_cmd",
    "queue_cmd",
    "task_cmd",
    "mcp_cmd",
    "gate_cmd",
    "agent_cmd",
    "operator_cmd",
    "collector_cmd",
    "collect_cmd",
    "stop_cmd",
    "retention_cmd",
    "landing_cmd",
    "db_cmd",
)


# Every command: the module that defines it, and the first paragraph of its help (what
# ``agent-task --help`` lists). A command's module is imported only when that command runs
# (or is asked for its own help), so ``--help`` and ``call`` do not load the service, the
# collector or the HTTP and MCP stacks. tests/taskcli/test_main.py checks this table against
# the commands the modules define: a new command is added here too.
_COMMANDS: dict[str, tuple[str, str]] = {
    "serve": (
        "serve_cmd",
        "Run the service: HTTP routes, MCP endpoints, the board, /metrics, health, /openapi.json.",
    ),
    "admin": ("admin_cmd", "Operator commands (run on the service host, against --data-dir)."),
    "call": ("call_cmd", "Call operation VERB on the service and print its JSON answer."),
    "queue": ("queue_cmd", "The agent task queue (agenttask.* verbs)."),
    "task": (
        "task_cmd",
        "Run workflow OPERATION (next, claim, heartbeat, result, status, ...) for a route.",
    ),
    "mcp": (
        "mcp_cmd",
        "Serve the MCP tools on stdio (queue tools, or workflow tools with a route).",
    ),
    "gate": (
        "gate_cmd",
        "The done gate: where a coding-agent session stands on the evidence ladder.",
    ),
    "gate-stop": (
        "gate_cmd",
        "The done gate's Stop hook: --harness claude-code|codex [--subagent].",
    ),
    "agent": (
        "agent_cmd",
        "Set up a coding agent (Claude Code, Codex) in one command, and check it.",
    ),
    "session-start": (
        "agent_cmd",
        "The SessionStart hook: the leases this agent holds, as the harness's context.",
    ),
    "operator": (
        "operator_cmd",
        "Operator acts on the authority (run on the service host, against --data-dir).",
    ),
    "collector": (
        "collector_cmd",
        "The local collector: signing key, runtime identity, retained transfers.",
    ),
    "checkpoint": (
        "collect_cmd",
        "Record CHANGE's subject at the current HEAD of a clean work tree.",
    ),
    "collect": (
        "collect_cmd",
        "Collect CHANGE's next collector task once: check, claim, run, sign, retain, upload, "
        "finalize.",
    ),
    "retry-upload": (
        "collect_cmd",
        "Resend the identical retained signed bytes (never reruns a command).",
    ),
    "qualification": (
        "collect_cmd",
        "Print whether CHANGE's current subject is qualified (read-only, advisory).",
    ),
    "reconcile": (
        "collect_cmd",
        "Reconcile the attempt that keeps CHANGE from being collected (it finds the attempt).",
    ),
    "task-stop": (
        "stop_cmd",
        "Read-only Claude Code Stop hook: pass only if CHANGE's current subject is qualified and "
        "the clean workspace is at its revision.",
    ),
    "task-codex-stop": (
        "stop_cmd",
        "Read-only Codex Stop hook: pass only if CHANGE's current subject is qualified and the "
        "clean workspace is at its revision.",
    ),
    "install-stop": (
        "stop_cmd",
        "Write the task-stop hook for CHANGE into the settings file you name (only there).",
    ),
    "init-repo": (
        "stop_cmd",
        "Write the managed 'Workflow tasks' block into the instruction files.",
    ),
    "retention": (
        "retention_cmd",
        "Prune old audit, idempotency, transition, transfer-byte and done-gate index rows.",
    ),
    "landing": (
        "landing_cmd",
        "Gate pushes to protected refs of a bare repository on the authority's landing check.",
    ),
    "land": (
        "landing_cmd",
        "Move the target ref to CHANGE's qualified commit if the authority admits it now.",
    ),
    "forge": (
        "landing_cmd",
        "Forge commit statuses (publish_forge_status): what is queued and how delivery went.",
    ),
    "db": (
        "db_cmd",
        "The journal: migrate it, show its versions, back it up, restore it, verify it.",
    ),
}


class _LazyGroup(click.Group):
    """A group that imports a command's module when the command is first looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _COMMANDS:
            _load(_COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing click writes, with a stand-in (same help) for a command not yet imported."""
        commands = []
        for name in self.list_commands(ctx):
            cmd = self.commands.get(name)
            if cmd is None:
                cmd = click.Command(name, help=_COMMANDS[name][1])
            if not cmd.hidden:
                commands.append((name, cmd))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            rows = [(name, cmd.get_short_help_str(limit)) for name, cmd in commands]
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=exit_table(),
)
@click.version_option(package_name="agenttask")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The service's data dir, for every command that uses one (default "
    "$AGENT_TASK_DATA_DIR or ~/.local/share/agent-task); a command's own --data-dir wins.",
)
@database_option
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None) -> None:
    """agent-task: typed, leased tasks for coding agents, with signed evidence.

    Commands that need the service's journal (operator and admin commands, same-host collect,
    the task-stop hooks) refuse a data dir without one and say which directory they used;
    only 'serve', 'operator register-repository' and 'operator apply' create it.
    """
    set_global_data_dir(ctx, data_dir)


_loaded: list[str] = []


def _load(module: str) -> None:
    if module not in _loaded:
        importlib.import_module(f"taskcli.{module}").register(cli)
        _loaded.append(module)


def load_commands() -> click.Group:
    """Register every command module's commands on :data:`cli` (once) and return it."""
    for name in _COMMAND_MODULES:
        _load(name)
    return cli


def main() -> None:
    """Entry point of the ``agent-task`` script."""
    if sys.argv[1:2] == ["gate-stop"]:
        # The Stop hook must start fast: dispatch it before click and any command module, to
        # the fast path that answers from the index (it hands over to the full hook).
        from taskcli.gate_stop import main as gate_stop

        sys.exit(gate_stop(sys.argv[2:]))
    cli()
