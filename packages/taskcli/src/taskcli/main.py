"""The ``agent-task`` command: one click group; each feature module adds its commands.

Every command module exposes ``register(group: click.Group) -> None``. Exit statuses come
from the one ErrorCode -> exit table in taskcore (:attr:`taskcore.ErrorKind.exit_status`).
"""

from __future__ import annotations

import importlib

import click

__all__ = ["cli", "main"]

# Modules under taskcli that add commands, in help order.
_COMMAND_MODULES: tuple[str, ...] = ()


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=(
        "Exit status: 0 success; 1 internal error; 2 usage error; 3 invalid request; "
        "4 not authenticated or not allowed; 5 not found; 6 conflict with current state; "
        "7 too large; 8 busy or unavailable (retry)."
    ),
)
@click.version_option(package_name="taskcli")
def cli() -> None:
    """agent-task: typed, leased tasks for coding agents, with signed evidence."""


def _load() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(f"taskcli.{name}").register(cli)


def main() -> None:
    """Entry point of the ``agent-task`` script."""
    _load()
    cli()
