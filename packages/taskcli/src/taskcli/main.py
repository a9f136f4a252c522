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

from taskcli.common import exit_table, set_global_data_dir

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
    "operator_cmd",
    "collector_cmd",
    "collect_cmd",
    "stop_cmd",
    "retention_cmd",
    "landing_cmd",
)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=exit_table(),
)
@click.version_option(package_name="taskcli")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The service's data dir, for every command that uses one (default "
    "$AGENT_TASK_DATA_DIR or ~/.local/share/agent-task); a command's own --data-dir wins.",
)
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None) -> None:
    """agent-task: typed, leased tasks for coding agents, with signed evidence.

    Commands that need the service's journal (operator and admin commands, same-host collect,
    the task-stop hooks) refuse a data dir without one and say which directory they used;
    only 'serve', 'operator register-repository' and 'operator apply' create it.
    """
    set_global_data_dir(ctx, data_dir)


_loaded: list[str] = []

# Stop hooks and the one module each lives in (see main()).
_HOOK_MODULES = {"task-stop": "stop_cmd", "task-codex-stop": "stop_cmd"}


def load_commands() -> click.Group:
    """Register every command module's commands on :data:`cli` (once) and return it."""
    for name in _COMMAND_MODULES:
        if name not in _loaded:
            importlib.import_module(f"taskcli.{name}").register(cli)
            _loaded.append(name)
    return cli


def main() -> None:
    """Entry point of the ``agent-task`` script."""
    if sys.argv[1:2] == ["gate-stop"]:
        # The Stop hook must start fast: dispatch it before any other command module (and
        # the HTTP and MCP stacks they import) is loaded.
        from taskcore.gate.hook import main as gate_stop

        sys.exit(gate_stop(sys.argv[2:]))
    hook_module = _HOOK_MODULES.get(sys.argv[1] if len(sys.argv) > 1 else "")
    if hook_module is not None:
        # The task-stop hooks run at every agent stop: load only the module defining them.
        importlib.import_module(f"taskcli.{hook_module}").register(cli)
        _loaded.append(hook_module)
        cli()
        return
    load_commands()()
