"""``agent-task admin token create|list|revoke`` and ``agent-task admin oauth ...``.

Operator commands on the service host. ``admin oauth pending|approve|deny|list|revoke``
decide OAuth authorization requests without a browser (``approve`` prints the URL that
completes the client's flow: open it where the client waits) and list or revoke grants.

Each is one ``operator.token_*`` operation on the journal in ``--data-dir``, called in
process (the operator is on the service host) and audited once like every call; nothing
here goes over the network. The commands are generated from the operations' input types
(:mod:`taskcli.generate`) and print the operation's wire answer with ``--json``. ``create``
prints the new bearer token alone on stdout, so a script can capture it; only its hash is
stored.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

import click
from taskcore.operator_ops import OperatorDesk, operator_registry

from taskcli.common import data_dir_option, resolve_data_dir
from taskcli.generate import Call, Shape, command_name, operation_command
from taskcli.webhook_cmd import webhook_group

__all__ = ["OAUTH_COMMANDS", "OAUTH_PREFIX", "TOKEN_COMMANDS", "TOKEN_PREFIX", "register"]

TOKEN_PREFIX = "operator.token_"  # noqa: S105 - an operation-name prefix, not a secret
"""The token acts, offered here as ``admin token <act>`` (the other acts are ``operator``)."""

TOKEN_COMMANDS: dict[str, str] = {}
"""``operator.token_<act>`` -> its ``agent-task admin token`` command."""

OAUTH_PREFIX = "operator.oauth_"
"""The OAuth acts, offered as ``admin oauth <act>``."""

OAUTH_COMMANDS: dict[str, str] = {}
"""``operator.oauth_<act>`` -> its ``agent-task admin oauth`` command."""


@click.group("admin")
def admin_group() -> None:
    """Operator commands (run on the service host, against --data-dir)."""


@admin_group.group("token")
def token_group() -> None:
    """Bearer tokens: create, list, revoke."""


@admin_group.group("oauth")
def oauth_group() -> None:
    """OAuth clients: pending requests (approve, deny), grants (list, revoke)."""


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%MZ")


def _table(answer: Any) -> str:
    head = f"{'TOKEN ID':<16}  {'WORKSPACE':<16}  {'TIER':<6}  AUT  {'CREATED':<17}  {'REVOKED':<17}  NAME"
    lines = [head]
    for r in answer["tokens"]:
        lines.append(
            f"{r['token_id']:<16}  {r['workspace'][:16]:<16}  {r['tier']:<6}  "
            f"{r['autonomy']:>3}  {_when(r['created_at_ms']):<17}  "
            f"{_when(r['revoked_at_ms']):<17}  {r['name']}"
        )
    return "\n".join(lines)


def _revoked(answer: Any) -> str:
    return f"revoked {answer['token_id']}" + (
        "" if answer["was_live"] else " (it was already revoked)"
    )


def _pending(answer: Any) -> str:
    lines = [f"{'REQUEST ID':<36}  {'CREATED':<17}  CLIENT / REDIRECT / SCOPE"]
    for r in answer["requests"]:
        lines.append(
            f"{r['request_id']:<36}  {_when(r['created_at_ms']):<17}  {r['client_name']}\n"
            f"{'':<56}{r['redirect_uri']}\n{'':<56}{r['scope']}"
        )
    return "\n".join(lines)


def _grants(answer: Any) -> str:
    head = f"{'GRANT ID':<20}  {'WORKSPACE':<16}  {'TIER':<6}  AUT  {'CREATED':<17}  {'REVOKED':<17}  CLIENT"
    lines = [head]
    for g in answer["grants"]:
        lines.append(
            f"{g['grantId']:<20}  {g['workspace'][:16]:<16}  {g['tier']:<6}  {g['autonomy']:>3}  "
            f"{_when(g['createdAtMs']):<17}  {_when(g['revokedAtMs']):<17}  {g['clientName']}"
        )
    return "\n".join(lines)


def _decided(answer: Any) -> str:
    if answer["status"] == "approved":
        return (
            f"approved: grant {answer['grant_id']} in {answer['workspace']}\n"
            "open this URL where the client waits (or paste it into the client):\n"
            f"{answer['redirect_to']}"
        )
    return f"denied; the client is told at:\n{answer['redirect_to']}"


_RENDER: dict[str, Callable[[Any], str]] = {
    "operator.oauth_pending": _pending,
    "operator.oauth_list": _grants,
    "operator.oauth_approve": _decided,
    "operator.oauth_deny": _decided,
    "operator.oauth_revoke": lambda a: (
        f"revoked {a['grant_id']}" + ("" if a["was_live"] else " (it was already revoked)")
    ),
    "operator.token_create": lambda answer: str(answer["token"]),
    "operator.token_list": _table,
    "operator.token_revoke": _revoked,
}
_HELP = {
    "operator.token_create": "Create a token and print it (alone, on stdout). It is shown only "
    "this once.\n\nThe data dir must be the running service's (a missing journal is refused, "
    "never created: a token in another journal would be unknown to the service). --json "
    "prints the whole answer.\n\n(operator.token_create)",
}


def _call(name: str) -> Call:
    def call(body: dict[str, Any], options: dict[str, Any]) -> Any:
        with OperatorDesk(resolve_data_dir(options["data_dir"])) as desk:
            return desk.answer(name, json.dumps(body, ensure_ascii=False).encode("utf-8"))

    return call


_ARGUMENT = {
    "operator.token_revoke": "token_id",
    "operator.oauth_approve": "request_id",
    "operator.oauth_deny": "request_id",
    "operator.oauth_revoke": "grant_id",
}


def _generate(group: click.Group, prefix: str, commands: dict[str, str]) -> None:
    for op in operator_registry():
        if not op.name.startswith(prefix):
            continue
        name = command_name(op.name.removeprefix(prefix))
        argument = _ARGUMENT.get(op.name)
        shape = Shape(argument=argument) if argument else Shape()
        group.add_command(
            operation_command(
                op,
                name,
                _call(op.name),
                shape=shape,
                render=_RENDER.get(op.name),
                options=(data_dir_option,),
                help_text=_HELP.get(op.name),
            )
        )
        commands[op.name] = name


_generate(token_group, TOKEN_PREFIX, TOKEN_COMMANDS)
_generate(oauth_group, OAUTH_PREFIX, OAUTH_COMMANDS)
admin_group.add_command(webhook_group)


def register(group: click.Group) -> None:
    """Add ``admin``."""
    group.add_command(admin_group)
