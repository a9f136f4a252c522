"""``agent-task task OP``: the workflow task operations of one repository and profile.

``agent-task task next``, ``claim``, ``heartbeat``, ``result``, ``status`` (and every other
workflow operation: ``capabilities``, ``instructions``, ``reference``, ``cancel``,
``reconcile``, ``recovery``, ...) send ``{"operation": OP, "request": --request}`` to the
workflow route of ``--repository``/``--profile`` and print the answer readably, or as JSON
with ``--json`` (as every command does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from taskcli.common import (
    RequestCommand,
    ServiceClient,
    client_options,
    emit,
    read_json_argument,
    request_option,
    route_options,
    run,
)

__all__ = ["EVERYDAY", "register"]

EVERYDAY = ("next", "claim", "heartbeat", "result", "status")
"""The operations listed first in ``agent-task task --help``."""


@click.command("task", cls=RequestCommand)
@click.argument("operation")
@request_option
@click.option("--json", "--json-output", "as_json", is_flag=True, help="Print JSON for programs.")
@route_options
@client_options
def task_command(
    operation: str,
    request: str | None,
    as_json: bool,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
) -> None:
    """Run workflow OPERATION (next, claim, heartbeat, result, status, ...) for a route.

    Example: agent-task task next --request '{"version": 1, "change_id": "main-work"}'
    """

    def act() -> Any:
        body = read_json_argument(request)
        return ServiceClient(url, token_file).workflow(repository, profile, operation, body)

    emit(run(as_json, act), as_json)


def register(group: click.Group) -> None:
    """Add ``task``."""
    group.add_command(task_command)
