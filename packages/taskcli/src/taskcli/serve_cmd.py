"""``agent-task serve``: run the whole service (HTTP, MCP) on the embedded SQLite default.

With no flags it works in a fresh place: it creates the data directory, and on the first
start of a fresh journal writes an admin token to ``DATA_DIR/admin.token`` (mode 0600) and
says where, once. Beside the HTTP server it runs the forge-status delivery worker
(:mod:`taskcore.evidence.forge_delivery`), which is idle unless a profile publishes statuses. SIGTERM or Ctrl-C stops it gracefully: it stops accepting, lets in-flight
requests finish, then closes the journal.
"""

from __future__ import annotations

from pathlib import Path

import click
from taskcore import ErrorCode, Service, TaskError
from taskcore.auth import TokenAdmin
from taskcore.evidence.forge_delivery import start_forge_delivery

from taskcli.common import data_dir_option, fail, resolve_data_dir

__all__ = ["register"]


@click.command("serve")
@data_dir_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8787,
    show_default=True,
    help="Port to listen on (0: any free port; the address is printed).",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="uvicorn log level.",
)
def serve_command(data_dir: Path | None, host: str, port: int, log_level: str) -> None:
    """Run the service: HTTP routes, MCP endpoints, health and /openapi.json."""
    from taskhttp import create_app, serve

    directory = resolve_data_dir(data_dir)
    try:
        with TokenAdmin(directory, create=True) as admin:
            written = admin.first_admin_token()
        service = Service.open(directory)
    except TaskError as err:
        fail(err, False)
    if written is not None:
        click.echo(
            f"agent-task: wrote the first admin token to {written} (mode 0600); "
            "it is not shown anywhere else",
            err=True,
        )
    delivery = start_forge_delivery(service)
    try:

        def ready(url: str) -> None:
            click.echo(f"agent-task: serving {url} (data dir {directory})", err=True)

        try:
            serve(create_app(service), host=host, port=port, on_ready=ready, log_level=log_level)
        except OSError as exc:
            fail(
                TaskError(
                    ErrorCode.SERVICE_UNREACHABLE,
                    f"cannot listen on {host}:{port} ({exc.strerror or exc})",
                ),
                False,
            )
    finally:
        delivery.stop()
        service.close()
    click.echo("agent-task: stopped", err=True)


def register(group: click.Group) -> None:
    """Add ``serve``."""
    group.add_command(serve_command)
