"""``agent-task serve``: run the whole service (HTTP, MCP) on the embedded SQLite default.

With no flags it works in a fresh place: it creates the data directory, and on the first
start of a fresh journal writes an admin token to ``DATA_DIR/admin.token`` (mode 0600) and
says where, once. Beside the HTTP server it runs the forge-status delivery worker
(:mod:`taskcore.evidence.forge_delivery`), which is idle unless a profile publishes statuses. SIGTERM or Ctrl-C stops it gracefully: it stops accepting, lets in-flight
requests finish, then closes the journal.

It also serves the operator board at ``/board`` and ``/metrics``, logs one line per request
(``--log-format text|json``) and runs the retention sweep on the schedule of
``DATA_DIR/retention.json`` (``interval_minutes``, default 360; 0 turns it off).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
from taskcore import ErrorCode, Service, TaskError
from taskcore.auth import TokenAdmin
from taskcore.evidence.forge_delivery import start_forge_delivery
from taskcore.retention import RetentionSchedule, default_gate_index, load_retention_config

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
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="One line per request on stderr, as key=value text or as JSON.",
)
@click.option(
    "--board-secure-cookies",
    is_flag=True,
    help="Mark board cookies Secure even over plain HTTP (behind a TLS-terminating proxy).",
)
def serve_command(
    data_dir: Path | None,
    host: str,
    port: int,
    log_level: str,
    log_format: str,
    board_secure_cookies: bool,
) -> None:
    """Run the service: HTTP routes, MCP endpoints, the board, /metrics, health, /openapi.json."""
    from taskhttp import create_app, serve

    directory = resolve_data_dir(data_dir)
    try:
        with TokenAdmin(directory, create=True) as admin:
            written = admin.first_admin_token()
        retention = load_retention_config(directory)
        service = Service.open(directory)
    except TaskError as err:
        fail(err, False)
    _request_log()
    schedule = RetentionSchedule(service, retention, gate_index=default_gate_index()).start()
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
            app = create_app(
                service, log_format=log_format, board_secure=board_secure_cookies or None
            )
            serve(app, host=host, port=port, on_ready=ready, log_level=log_level)
        except OSError as exc:
            fail(
                TaskError(
                    ErrorCode.SERVICE_UNREACHABLE,
                    f"cannot listen on {host}:{port} ({exc.strerror or exc})",
                ),
                False,
            )
    finally:
        schedule.stop()
        delivery.stop()
        service.close()
    click.echo("agent-task: stopped", err=True)


def _request_log() -> None:
    """Send the one-line-per-request log to stderr (the middleware formats each line)."""
    log = logging.getLogger("agent_task.access")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def register(group: click.Group) -> None:
    """Add ``serve``."""
    group.add_command(serve_command)
