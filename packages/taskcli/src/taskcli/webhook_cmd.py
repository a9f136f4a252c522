"""``agent-task admin webhook add|list|remove|test|redeliver|deliveries``: operator commands.

Each is one ``operator.webhook_*`` act on the journal in ``--data-dir``, run in process on
the service host (:class:`taskcore.events.admin.WebhookAdmin`) and audited once; nothing goes
over the network except the test message ``test`` sends. ``add`` takes the signing secret
from ``--secret-file``: it writes a new ``whsec_`` secret there (mode 0600) when the file does
not exist, and uses the one in it when it does; the secret is never printed. ``list``,
``remove``, ``redeliver`` and ``deliveries`` are generated from their operations' input types
(:mod:`taskcli.generate`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from taskcore.events.admin import WebhookAdmin
from taskcore.events.operations import webhook_registry

from taskcli.common import data_dir_option, emit, json_option, resolve_data_dir, run
from taskcli.generate import Call, Shape, command_name, operation_command

__all__ = ["WEBHOOK_COMMANDS", "webhook_group"]

_PREFIX = "operator.webhook_"

WEBHOOK_COMMANDS: dict[str, str] = {
    "operator.webhook_add": "add",
    "operator.webhook_test": "test",
}
"""Each ``operator.webhook_*`` act and the name of its ``admin webhook`` command (``add`` and
``test`` are written by hand, the others generated below)."""


@click.group("webhook")
def webhook_group() -> None:
    """Webhooks: signed POSTs of a workspace's events (add, list, remove, test, ...)."""


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%MZ")


def _endpoints(answer: Any) -> str:
    lines = [f"{'ENDPOINT':<35}  {'WORKSPACE':<12}  QUEUED  DELIVERED  DEAD  EVENTS / URL"]
    for e in answer["endpoints"]:
        gone = f"  (removed {_when(e['removedAtMs'])})" if e["removedAtMs"] else ""
        lines.append(
            f"{e['endpointId']:<35}  {e['workspace'][:12]:<12}  {e['queued']:>6}  "
            f"{e['delivered']:>9}  {e['dead']:>4}  {' '.join(e['events'])} -> {e['url']}{gone}"
        )
    return "\n".join(lines)


def _deliveries(answer: Any) -> str:
    lines = [f"{'SEQ':>8}  {'STATUS':<9}  TRIES  {'LAST':<12}  {'UPDATED':<17}  EVENT"]
    for d in answer["deliveries"]:
        lines.append(
            f"{d['seq']:>8}  {d['status']:<9}  {d['attempts']:>5}  {(d['lastError'] or '-'):<12}  "
            f"{_when(d['updatedAtMs']):<17}  {d['messageId']} {d['eventType']}"
        )
    return "\n".join(lines)


def _delivery(answer: Any) -> str:
    d = answer["delivery"]
    return f"delivery {d['seq']} ({d['messageId']} {d['eventType']}): {d['status']}"


_RENDER: dict[str, Callable[[Any], str]] = {
    "operator.webhook_list": _endpoints,
    "operator.webhook_deliveries": _deliveries,
    "operator.webhook_redeliver": _delivery,
    "operator.webhook_remove": lambda a: (
        f"removed {a['endpointId']}" + ("" if a["wasLive"] else " (it was already removed)")
    ),
}
_SHAPES = {
    "operator.webhook_remove": Shape(argument="endpoint_id"),
    "operator.webhook_redeliver": Shape(argument="seq"),
}


def _call(name: str) -> Call:
    def call(body: dict[str, Any], options: dict[str, Any]) -> Any:
        with WebhookAdmin(resolve_data_dir(options["data_dir"])) as admin:
            return admin.answer(name, json.dumps(body, ensure_ascii=False).encode("utf-8"))

    return call


@webhook_group.command("add")
@click.option("--workspace", required=True, help="Whose events.")
@click.option("--url", "url", required=True, help="The http(s) URL to POST each event to.")
@click.option(
    "--events",
    "events",
    required=True,
    multiple=True,
    metavar="PATTERN",
    help="Operations to send: a name, or a pattern with * (agenttask.*, *). Repeatable.",
)
@click.option(
    "--secret-file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The whsec_ signing secret: written there (mode 0600) if the file does not exist, "
    "read from it if it does.",
)
@click.option(
    "--allow-private-targets",
    is_flag=True,
    help="Allow a URL on a loopback, private or link-local address (refused otherwise).",
)
@click.option("--description", default="", help="A label for people.")
@data_dir_option
@json_option
def add_command(
    workspace: str,
    url: str,
    events: tuple[str, ...],
    secret_file: Path,
    allow_private_targets: bool,
    description: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Send a workspace's events matching PATTERNs to URL, signed (Standard Webhooks).

    Receivers verify each request with the secret (the standardwebhooks or svix library):
    headers webhook-id (the event id, the same on every retry), webhook-timestamp and
    webhook-signature. Deliveries are retried for 24 hours.

    (operator.webhook_add)
    """

    def call() -> Any:
        with WebhookAdmin(resolve_data_dir(data_dir)) as admin:
            return admin.add(
                workspace=workspace,
                url=url,
                events=events,
                secret_file=secret_file,
                allow_private_targets=allow_private_targets,
                description=description,
            )

    answer = run(as_json, call)

    def render(a: Any) -> str:
        made = (
            f"; wrote a new secret to {secret_file} (mode 0600)" if a["secretFileCreated"] else ""
        )
        return f"added {a['endpoint']['endpointId']} -> {a['endpoint']['url']}{made}"

    emit(answer, as_json, render)


@webhook_group.command("test")
@click.argument("endpoint_id")
@data_dir_option
@json_option
def test_command(endpoint_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Send a webhook.test message to ENDPOINT_ID now and say how it went.

    A failed attempt stays queued; the running service retries it like any delivery.

    (operator.webhook_test)
    """

    def call() -> Any:
        with WebhookAdmin(resolve_data_dir(data_dir)) as admin:
            return admin.test(endpoint_id)

    def render(a: Any) -> str:
        d = a["delivery"]
        how = f"HTTP {a['httpStatus']}" if a["httpStatus"] else (d["lastError"] or "not sent")
        return f"test message {d['messageId']}: {d['status']} ({how})"

    emit(run(as_json, call), as_json, render)


def _generate(group: click.Group) -> None:
    for op in webhook_registry():
        name = command_name(op.name.removeprefix(_PREFIX))
        if name in group.commands:
            continue
        group.add_command(
            operation_command(
                op,
                name,
                _call(op.name),
                shape=_SHAPES.get(op.name, Shape()),
                render=_RENDER.get(op.name),
                options=(data_dir_option,),
            )
        )
        WEBHOOK_COMMANDS[op.name] = name


_generate(webhook_group)
