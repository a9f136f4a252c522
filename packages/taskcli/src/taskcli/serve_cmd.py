"""``agent-task serve``: run the whole service (HTTP, MCP) on the embedded SQLite default.

It binds its port first: a port in use fails (exit 8) before anything is written. With no
flags it works in a fresh place: it creates the data directory, and on the first
start of a fresh journal writes an admin token to ``DATA_DIR/admin.token`` (mode 0600) and
says where, once. It never creates a journal over the remains of an earlier one (a missing
or empty ``journal.sqlite`` beside its admin token, WAL or collector attempts): it says what
is missing and how to restore it, and ``--init`` starts a new, empty service there on
purpose. SIGTERM or Ctrl-C stops it gracefully: it stops accepting, lets in-flight requests
finish, then closes the journal.

The transport and rate limits, the request log's format, the board's cookies and the
session-gate workspaces have flags, generated from :data:`taskcore.hosting.SETTINGS`: each
flag's environment variable is read when the flag is not given (the same variables configure
the ASGI app, :mod:`taskhttp.asgi`), and their defaults are in :mod:`taskcore.limits`
(``docs/adapters.md`` lists them). What runs beside the doors (the journal, the retention
sweep, forge delivery) is :class:`taskcore.hosting.Host`, as under any ASGI server.

Beside the HTTP server it runs the forge-status delivery worker
(:mod:`taskcore.evidence.forge_delivery`), which is idle unless a profile publishes
statuses. It also serves the operator board at ``/board`` and ``/metrics``, logs one line
per request (``--log-format text|json``) and runs the retention sweep on the schedule of
``DATA_DIR/retention.json`` (``interval_minutes``, default 360; 0 turns it off).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource
from taskcore import ErrorCode, TaskError
from taskcore.hosting import SETTINGS, Host, HostSettings, Setting

from taskcli.common import data_dir_option, fail, require_server_extra, resolve_data_dir

if TYPE_CHECKING:
    from taskhttp import TransportLimits

__all__ = ["register"]

F = TypeVar("F", bound=Callable[..., Any])


def _option(setting: Setting) -> Callable[[F], F]:
    """``serve``'s flag for one hosted-service setting: its bound, default and variable.

    The variable is read by :meth:`HostSettings.load` (as the ASGI app reads it), for a flag
    not given on the command line.
    """
    if setting.kind is bool:
        return click.option(
            setting.flag, setting.name, is_flag=True, help=f"{setting.help} [env {setting.env}]"
        )
    if setting.many:
        return click.option(
            setting.flag,
            setting.name,
            multiple=True,
            metavar="WORKSPACE",
            help=f"{setting.help} Repeatable. [env {setting.env}, comma-separated]",
        )
    kind: click.ParamType[Any]
    if setting.choices:
        kind = click.Choice(setting.choices)
    elif setting.kind is str:
        kind = click.STRING
    elif setting.kind is float:
        kind = click.FloatRange(min=setting.minimum)
    else:
        kind = click.IntRange(min=None if setting.minimum is None else int(setting.minimum))
    return click.option(
        setting.flag,
        setting.name,
        type=kind,
        default=setting.default,
        show_default=True,
        help=f"{setting.help} [env {setting.env}]",
    )


def _settings_options(f: F) -> F:
    for setting in reversed(SETTINGS):
        f = _option(setting)(f)
    return f


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
    "--init",
    is_flag=True,
    help="Start a new, empty service in a data directory that holds files of an earlier one "
    "whose journal is gone (they are renamed aside with an .orphaned-<time> suffix).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    envvar="AGENT_TASK_WORKERS",
    help="Server processes on the one port, each with its own journal connections "
    "(docs/deploy.md, 'Workers in one server', says how to size it). [env AGENT_TASK_WORKERS]",
)
@_settings_options
def serve_command(
    data_dir: Path | None,
    host: str,
    port: int,
    log_level: str,
    init: bool,
    workers: int,
    **given: Any,
) -> None:
    """Run the service: HTTP routes, MCP endpoints, the board, /metrics, health, /openapi.json."""
    require_server_extra("serve", "taskhttp")
    from taskhttp import TransportLimits, bind
    from taskhttp.requestlog import install_request_log
    from taskhttp.workers import run_host

    # Bind first: a port in use must fail before anything is written (a data dir, a journal,
    # an admin token nobody will use).
    try:
        sock = bind(host, port)
    except OSError as exc:
        fail(
            TaskError(
                ErrorCode.SERVICE_UNREACHABLE,
                f"cannot listen on {host}:{port} ({exc.strerror or exc}); nothing was written "
                "(choose another --port, or stop what listens there)",
            ),
            False,
        )

    ctx = click.get_current_context()
    flags = {
        name: value
        for name, value in given.items()
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    }
    try:
        settings = HostSettings.load(data_dir=resolve_data_dir(data_dir), **flags)
        hosted = Host(settings, first_admin_token=True, init=init)
        if workers > 1:
            hosted.prepare()
        else:
            hosted.start()
    except TaskError as err:
        sock.close()
        fail(err, False)
    for path in hosted.set_aside:
        original = path.name.split(".orphaned-")[0]
        click.echo(
            f"agent-task: moved {original} aside as {path.name} (an earlier service's file)",
            err=True,
        )
    install_request_log()
    if hosted.admin_token_file is not None:
        click.echo(
            f"agent-task: wrote the first admin token to {hosted.admin_token_file} (mode 0600); "
            "it is not shown anywhere else",
            err=True,
        )
    limits = TransportLimits.from_settings(settings)
    if workers > 1:
        _supervise(sock, settings, workers=workers, log_level=log_level, limits=limits)
        return
    try:

        def ready(url: str) -> None:
            click.echo(
                f"agent-task: serving {url} (data dir {settings.data_dir}; up to "
                f"{limits.connections()} connections)",
                err=True,
            )

        try:
            run_host(hosted, sock, log_level=log_level, on_ready=ready)
        except OSError as exc:
            fail(
                TaskError(
                    ErrorCode.SERVICE_UNREACHABLE,
                    f"cannot listen on {host}:{port} ({exc.strerror or exc})",
                ),
                False,
            )
    finally:
        hosted.stop()
    click.echo("agent-task: stopped", err=True)


def _supervise(
    sock: socket.socket,
    settings: HostSettings,
    *,
    workers: int,
    log_level: str,
    limits: TransportLimits,
) -> None:
    """``--workers N``: N worker processes on ``sock`` (:mod:`taskhttp.workers`)."""
    from taskhttp import address_of
    from taskhttp.workers import Supervisor

    url = address_of(sock)

    def ready() -> None:
        click.echo(
            f"agent-task: serving {url} (data dir {settings.data_dir}; {workers} workers, up "
            f"to {limits.connections()} connections each)",
            err=True,
        )

    def say(line: str) -> None:
        click.echo(line, err=True)

    try:
        status = Supervisor(sock, settings, workers=workers, log_level=log_level, say=say).run(
            ready
        )
    finally:
        sock.close()
    if status:
        sys.exit(status)
    click.echo("agent-task: stopped", err=True)


def register(group: click.Group) -> None:
    """Add ``serve``."""
    group.add_command(serve_command)
