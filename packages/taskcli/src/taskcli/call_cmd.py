"""``agent-task call VERB``: any registered operation over HTTP, JSON in and JSON out.

Queue and admin verbs go to ``POST /v/{verb}``; ``workflow.<op>`` goes to the workflow route
of ``--repository``/``--profile`` inside the ``{"operation", "request"}`` envelope
(``workflow.collector_upload`` sends the input bytes raw to the upload route). The request is
``--request`` inline, ``--request @FILE`` or ``--request -`` (stdin); the answer is printed as
indented JSON, or on one line with ``--json`` (for programs, as every command's ``--json``).
``--list`` lists the operations this build knows. ``operator.<act>`` runs in process on the
journal of ``--data-dir`` (the operator surface: no network door offers it), audited like
every call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from taskcore.names import WORKFLOW_PREFIX

from taskcli.common import (
    RequestCommand,
    ServiceClient,
    client_options,
    data_dir_option,
    emit,
    read_json_argument,
    request_option,
    resolve_data_dir,
    route_options,
    run,
)

__all__ = ["call_operation", "call_operator", "register"]

OPERATOR_PREFIX = "operator."


def call_operation(
    client: ServiceClient,
    verb: str,
    body: bytes,
    repository: str | None = None,
    profile: str | None = None,
) -> Any:
    """Send ``body`` to the route that serves ``verb`` and return the parsed answer."""
    if verb.startswith(WORKFLOW_PREFIX):
        op = verb.removeprefix(WORKFLOW_PREFIX)
        if op == "collector_upload":
            return client.upload(repository, profile, body)
        return client.workflow(repository, profile, op, body)
    return client.verb(verb, body)


def call_operator(data_dir: Path, verb: str, body: bytes) -> Any:
    """Run the operator act ``verb`` in process on ``data_dir``; return its JSON answer."""
    from taskcore.operator_ops import OperatorDesk

    with OperatorDesk(data_dir) as desk:
        return desk.answer(verb, body)


def _catalogue() -> list[dict[str, Any]]:
    from taskcore import Door  # the registry (every operation module) only for --list
    from taskcore.service import default_registry

    return [
        {
            "name": op.name,
            "surface": op.surface.value,
            "min_tier": op.min_tier.wire,
            "risk": op.risk.value,
            "min_autonomy": op.min_autonomy,
            "http": Door.HTTP in op.doors,
            "mcp_tool": op.mcp_tool,
            "summary": op.summary,
        }
        for op in default_registry().select()
    ]


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no operations are registered in this build"
    width = max(len(r["name"]) for r in rows)
    return "\n".join(
        f"{r['name']:<{width}}  {r['surface']:<8}  {r['min_tier']:<6}  {r['risk']:<11}  "
        f"{r['summary']}"
        for r in rows
    )


@click.command("call", cls=RequestCommand)
@click.argument("verb", required=False)
@request_option
@click.option("--list", "list_ops", is_flag=True, help="List the operations and exit.")
@click.option(
    "--json", "--compact", "compact", is_flag=True, help="Print JSON for programs (one line)."
)
@route_options
@client_options
@data_dir_option
def call_command(
    verb: str | None,
    request: str | None,
    list_ops: bool,
    compact: bool,
    repository: str | None,
    profile: str | None,
    url: str,
    token_file: Path | None,
    data_dir: Path | None,
) -> None:
    """Call operation VERB on the service and print its JSON answer.

    Example: agent-task call agenttask.create --request '{"verb": "agent.run"}'
    """
    if list_ops:
        emit(_catalogue(), compact, _table)
        return
    if not verb:
        raise click.UsageError("name a VERB, or use --list")

    def act() -> Any:
        body = read_json_argument(request)
        if verb.startswith(OPERATOR_PREFIX):
            return call_operator(resolve_data_dir(data_dir), verb, body)
        return call_operation(ServiceClient(url, token_file), verb, body, repository, profile)

    answer = run(compact, act)
    if compact:
        emit(answer, True)  # --json: the one compact document every command prints
    else:
        click.echo(json.dumps(answer, ensure_ascii=False, indent=2))


def register(group: click.Group) -> None:
    """Add ``call``."""
    group.add_command(call_command)
