"""``agent-task admin token create|list|revoke``: operator commands on the service host.

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

__all__ = ["TOKEN_COMMANDS", "TOKEN_PREFIX", "register"]

TOKEN_PREFIX = "operator.token_"  # noqa: S105 - an operation-name prefix, not a secret
"""The token acts, offered here as ``admin token <act>`` (the other acts are ``operator``)."""

TOKEN_COMMANDS: dict[str, str] = {}
"""``operator.token_<act>`` -> its ``agent-task admin token`` command."""


@click.group("admin")
def admin_group() -> None:
    """Operator commands (run on the service host, against --data-dir)."""


@admin_group.group("token")
def token_group() -> None:
    """Bearer tokens: create, list, revoke."""


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


_RENDER: dict[str, Callable[[Any], str]] = {
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


def _generate(group: click.Group) -> None:
    for op in operator_registry():
        if not op.name.startswith(TOKEN_PREFIX):
            continue
        name = command_name(op.name.removeprefix(TOKEN_PREFIX))
        shape = Shape(argument="token_id") if op.name == "operator.token_revoke" else Shape()
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
        TOKEN_COMMANDS[op.name] = name


_generate(token_group)
admin_group.add_command(webhook_group)


def register(group: click.Group) -> None:
    """Add ``admin``."""
    group.add_command(admin_group)
