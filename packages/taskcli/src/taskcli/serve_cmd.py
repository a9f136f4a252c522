"""``agent-task serve``: run the whole service (HTTP, MCP) on the embedded SQLite default.

With no flags it works in a fresh place: it creates the data directory, and on the first
start of a fresh journal writes an admin token to ``DATA_DIR/admin.token`` (mode 0600) and
says where, once. It never creates a journal over the remains of an earlier one (a missing
or empty ``journal.sqlite`` beside its admin token, WAL or collector attempts): it says what
is missing and how to restore it, and ``--init`` starts a new, empty service there on
purpose. SIGTERM or Ctrl-C stops it gracefully: it stops accepting, lets in-flight requests
finish, then closes the journal.

The transport and rate limits have flags; their defaults are in :mod:`taskcore.limits` and
``docs/adapters.md`` lists them.

Beside the HTTP server it runs the forge-status delivery worker
(:mod:`taskcore.evidence.forge_delivery`), which is idle unless a profile publishes
statuses, and the webhook worker (:mod:`taskcore.events.webhook_delivery`), idle until an
endpoint is added. With the ``[otel]`` extra and the standard ``OTEL_*`` variables, each call
is a span (:mod:`taskcore.tracing`). It also serves the operator board at ``/board`` and ``/metrics``, logs one line
per request (``--log-format text|json``) and runs the retention sweep on the schedule of
``DATA_DIR/retention.json`` (``interval_minutes``, default 360; 0 turns it off).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
from taskcore import ErrorCode, Service, TaskError
from taskcore.auth import TokenAdmin
from taskcore.events.webhook_delivery import start_webhook_delivery
from taskcore.evidence.forge_delivery import start_forge_delivery
from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    HTTP_BODY_BYTES_IN_FLIGHT_MAX,
    HTTP_BODY_TIMEOUT_SECONDS,
    HTTP_CONNECTIONS_MAX,
    HTTP_HEADER_TIMEOUT_SECONDS,
    HTTP_KEEPALIVE_TIMEOUT_SECONDS,
    RATE_ADDRESS_REFUSALS_BURST,
    RATE_ADDRESS_REFUSALS_PER_SECOND,
    RATE_TOKEN_CALLS_BURST,
    RATE_TOKEN_CALLS_PER_SECOND,
)
from taskcore.ratelimit import RateLimits
from taskcore.retention import RetentionSchedule, default_gate_index, load_retention_config
from taskcore.tracing import tracer_from_env

from taskcli.common import data_dir_option, fail, resolve_data_dir

__all__ = ["register"]

_SECONDS = click.FloatRange(min=0.1)


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
@click.option(
    "--init",
    is_flag=True,
    help="Start a new, empty service in a data directory that holds files of an earlier one "
    "whose journal is gone (they are renamed aside with an .orphaned-<time> suffix).",
)
@click.option(
    "--header-timeout",
    type=_SECONDS,
    default=HTTP_HEADER_TIMEOUT_SECONDS,
    show_default=True,
    help="Seconds a connection may take to send one request's headers.",
)
@click.option(
    "--body-timeout",
    type=_SECONDS,
    default=HTTP_BODY_TIMEOUT_SECONDS,
    show_default=True,
    help="Seconds a request may take to send its body once its headers are in.",
)
@click.option(
    "--keepalive-timeout",
    type=click.IntRange(min=1),
    default=HTTP_KEEPALIVE_TIMEOUT_SECONDS,
    show_default=True,
    help="Seconds an idle kept-alive connection stays open.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=HTTP_CONNECTIONS_MAX,
    show_default=True,
    help="Connections served at once (lowered to fit the descriptor limit; a few more may "
    "ask for health only).",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=COLLECTOR_ENVELOPE_MAX_BYTES),
    default=HTTP_BODY_BYTES_IN_FLIGHT_MAX,
    show_default=True,
    help="Request body bytes all requests may hold at once (503 OVERLOADED beyond).",
)
@click.option(
    "--token-rate",
    type=click.FloatRange(min=0),
    default=RATE_TOKEN_CALLS_PER_SECOND,
    show_default=True,
    help="Calls per second one token may make, sustained (0: no limit).",
)
@click.option(
    "--token-burst",
    type=click.IntRange(min=1),
    default=RATE_TOKEN_CALLS_BURST,
    show_default=True,
    help="Calls one token may make at once.",
)
@click.option(
    "--refusal-rate",
    type=click.FloatRange(min=0),
    default=RATE_ADDRESS_REFUSALS_PER_SECOND,
    show_default=True,
    help="Failed authentications per second one client address may cause (0: no limit).",
)
@click.option(
    "--refusal-burst",
    type=click.IntRange(min=1),
    default=RATE_ADDRESS_REFUSALS_BURST,
    show_default=True,
    help="Failed authentications one client address may cause at once.",
)
@click.option(
    "--session-gate-workspace",
    "session_gate_workspaces",
    multiple=True,
    metavar="WORKSPACE",
    help="Let tokens of WORKSPACE ask session_gate about this host's coding-agent sessions "
    "over the network (a single-user host; off by default). Repeatable.",
)
def serve_command(
    data_dir: Path | None,
    host: str,
    port: int,
    log_level: str,
    log_format: str,
    board_secure_cookies: bool,
    init: bool,
    header_timeout: float,
    body_timeout: float,
    keepalive_timeout: int,
    max_connections: int,
    max_body_bytes: int,
    token_rate: float,
    token_burst: int,
    refusal_rate: float,
    refusal_burst: int,
    session_gate_workspaces: tuple[str, ...],
) -> None:
    """Run the service: HTTP routes, MCP endpoints, the board, /metrics, health, /openapi.json."""
    from taskhttp import TransportLimits, create_app, serve

    directory = resolve_data_dir(data_dir)
    limits = TransportLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        keepalive_timeout=keepalive_timeout,
        max_connections=max_connections,
        body_bytes_in_flight=max_body_bytes,
    )
    rates = RateLimits(
        token_calls_per_second=token_rate,
        token_calls_burst=token_burst,
        address_refusals_per_second=refusal_rate,
        address_refusals_burst=refusal_burst,
    )
    try:
        with TokenAdmin(directory, create=True, init=init) as admin:
            set_aside = admin.set_aside
            written = admin.first_admin_token()
        retention = load_retention_config(directory)
        # OpenTelemetry from the standard OTEL_* variables, with the [otel] extra only.
        tracer = tracer_from_env()
        service = Service.open(
            directory,
            rate_limits=rates,
            session_gate_workspaces=frozenset(session_gate_workspaces),
            tracer=tracer,
        )
    except TaskError as err:
        fail(err, False)
    for path in set_aside:
        original = path.name.split(".orphaned-")[0]
        click.echo(
            f"agent-task: moved {original} aside as {path.name} (an earlier service's file)",
            err=True,
        )
    _request_log()
    schedule = RetentionSchedule(service, retention, gate_index=default_gate_index()).start()
    if written is not None:
        click.echo(
            f"agent-task: wrote the first admin token to {written} (mode 0600); "
            "it is not shown anywhere else",
            err=True,
        )
    delivery = start_forge_delivery(service)
    webhooks = start_webhook_delivery(service)
    try:

        def ready(url: str) -> None:
            click.echo(
                f"agent-task: serving {url} (data dir {directory}; up to "
                f"{limits.connections()} connections)",
                err=True,
            )

        try:
            app = create_app(
                service,
                log_format=log_format,
                board_secure=board_secure_cookies or None,
                limits=limits,
            )
            serve(
                app,
                host=host,
                port=port,
                on_ready=ready,
                log_level=log_level,
                limits=limits,
            )
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
        webhooks.stop()
        service.close()
        if tracer is not None:
            tracer.shutdown()  # flush the spans still batched
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
