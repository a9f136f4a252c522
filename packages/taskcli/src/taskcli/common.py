"""Shared CLI plumbing: JSON or human output, error reporting, exit statuses.

Output for programs is ``--json`` (one JSON document on stdout); output for people is
readable text. Errors go to stderr as one line (or as ``{error, code}`` JSON with ``--json``)
and the process exits with the status of the error's kind.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
from taskcore import ErrorCode, TaskError
from taskcore.paths import default_data_dir

__all__ = ["data_dir_option", "emit", "fail", "json_option", "resolve_data_dir"]

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Service data directory (default: $AGENT_TASK_DATA_DIR or ~/.local/share/agent-task).",
)


def resolve_data_dir(value: Path | None) -> Path:
    """Return the data directory to use."""
    return value if value is not None else default_data_dir()


def emit(value: Any, as_json: bool, human: Callable[[Any], str] | None = None) -> None:
    """Print ``value`` as JSON, or through ``human`` for people."""
    if as_json or human is None:
        click.echo(json.dumps(value, ensure_ascii=False, indent=None if as_json else 2))
    else:
        click.echo(human(value))


def fail(err: TaskError, as_json: bool) -> NoReturn:
    """Report ``err`` on stderr and exit with its kind's status."""
    if as_json:
        click.echo(json.dumps(err.to_json(), ensure_ascii=False), err=True)
    else:
        click.echo(f"agent-task: {err.describe()} [{err.code.value}]", err=True)
    sys.exit(err.code.kind.exit_status)


def internal(message: str) -> TaskError:
    """An INTERNAL error for the CLI's own failures."""
    return TaskError(ErrorCode.INTERNAL, message)
