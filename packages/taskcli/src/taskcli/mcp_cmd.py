"""``agent-task mcp --stdio``: the same MCP tools as the service, for one local client.

The tools run in this process against the journal in ``--data-dir``. The caller is the actor
of ``--token-file`` (or ``AGENT_TASK_TOKEN_FILE`` / ``AGENT_TASK_TOKEN``) when one is given,
authenticated against that journal; otherwise a *local actor* with ``--workspace`` (default
``default``), ``--tier`` (default ``agent``) and ``--autonomy`` (default 1), which has no
token record and so cannot be revoked: whoever can start this command can read the data
directory anyway. With ``--repository`` and ``--profile`` it serves the workflow tools of that
route (as ``/v1/hub/workspace/mcp`` does); without, the queue tools (as ``/mcp``).
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from taskcore import MAX_AUTONOMY, Actor, Route, Service, TaskError, Tier
from taskcore.auth import read_token_file

from taskcli.common import (
    data_dir_option,
    fail,
    require_server_extra,
    resolve_data_dir,
    route_options,
)

__all__ = ["LOCAL_TOKEN_ID", "register"]

LOCAL_TOKEN_ID = "local-stdio"  # noqa: S105 - an audit label, not a secret
"""The token id audit events of the local actor carry."""


@click.command("mcp")
@click.option("--stdio", is_flag=True, required=True, help="Serve MCP on stdin/stdout.")
@data_dir_option
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="AGENT_TASK_TOKEN_FILE",
    default=None,
    help="Act as this token's actor [env AGENT_TASK_TOKEN_FILE; or AGENT_TASK_TOKEN].",
)
@click.option("--workspace", default="default", show_default=True, help="Local actor workspace.")
@click.option(
    "--tier",
    type=click.Choice([t.wire for t in Tier]),
    default="agent",
    show_default=True,
    help="Local actor tier.",
)
@click.option(
    "--autonomy",
    type=click.IntRange(0, MAX_AUTONOMY),
    default=1,
    show_default=True,
    help="Local actor autonomy.",
)
@route_options
def mcp_command(
    stdio: bool,
    data_dir: Path | None,
    token_file: Path | None,
    workspace: str,
    tier: str,
    autonomy: int,
    repository: str | None,
    profile: str | None,
) -> None:
    """Serve the MCP tools on stdio (queue tools, or workflow tools with a route)."""
    require_server_extra("mcp", "taskmcp.server")
    import anyio
    from taskmcp import Family, run_stdio

    try:
        # The caller is the local user, who can read this host's transcripts anyway.
        service = Service.open(resolve_data_dir(data_dir), session_gate_workspaces=None)
    except TaskError as err:
        fail(err, True)
    try:
        token = read_token_file(token_file) if token_file is not None else None
        token = token or os.environ.get("AGENT_TASK_TOKEN", "").strip() or None
        if token is not None:
            actor = service.authenticate(token)
        else:
            actor = Actor(
                token_id=LOCAL_TOKEN_ID,
                workspace=workspace,
                tier=Tier.from_wire(tier),
                autonomy=autonomy,
                name="local stdio",
            )
        route = None
        if repository or profile:
            route = Route(repository=repository or "", profile=profile or "")
        family = Family.WORKSPACE if route is not None else Family.QUEUE
        anyio.run(run_stdio, service, family, actor, route)
    except TaskError as err:
        fail(err, True)
    finally:
        service.close()


def register(group: click.Group) -> None:
    """Add ``mcp``."""
    group.add_command(mcp_command)
