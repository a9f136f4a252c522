"""``agent-task admin token create|list|revoke``: operator commands on the service host.

Each is one ``operator.token_*`` operation on the journal in ``--data-dir``, called in
process (the operator is on the service host) and audited once like every call; nothing
here goes over the network. ``create`` prints the new bearer token alone on stdout,
so a script can capture it; only its hash is stored.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import click
from taskcore import MAX_AUTONOMY, Tier
from taskcore.operator_ops import OperatorDesk, TokenRow

from taskcli.common import data_dir_option, emit, json_option, resolve_data_dir, run

__all__ = ["register"]


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


def _row(record: TokenRow) -> dict[str, Any]:
    return {
        "token_id": record.token_id,
        "name": record.name,
        "workspace": record.workspace,
        "tier": record.tier,
        "autonomy": record.autonomy,
        "created_at_ms": record.created_at_ms,
        "revoked_at_ms": record.revoked_at_ms,
    }


@token_group.command("create")
@click.option("--workspace", required=True, help="Workspace the token is bound to.")
@click.option(
    "--tier", type=click.Choice([t.wire for t in Tier]), required=True, help="Permission tier."
)
@click.option(
    "--autonomy",
    type=click.IntRange(0, MAX_AUTONOMY),
    default=1,
    show_default=True,
    help="Autonomy level (0 read only .. 3 destructive).",
)
@click.option("--name", default="", help="A label for people.")
@data_dir_option
def create_command(
    workspace: str, tier: str, autonomy: int, name: str, data_dir: Path | None
) -> None:
    """Create a token and print it (alone, on stdout). It is shown only this once.

    The data dir must be the running service's (a missing journal is refused, never created:
    a token in another journal would be unknown to the service).
    """

    def act() -> str:
        with OperatorDesk(resolve_data_dir(data_dir)) as desk:
            issued = desk.call(
                "operator.token_create",
                {"workspace": workspace, "tier": tier, "autonomy": autonomy, "name": name},
            )
        return str(issued.token)

    click.echo(run(False, act))


@token_group.command("list")
@click.option("--workspace", default=None, help="Only tokens of this workspace.")
@data_dir_option
@json_option
def list_command(workspace: str | None, data_dir: Path | None, as_json: bool) -> None:
    """List tokens (ids and bindings; secrets are never stored)."""

    def act() -> list[dict[str, Any]]:
        with OperatorDesk(resolve_data_dir(data_dir)) as desk:
            listed = desk.call("operator.token_list", {"workspace": workspace})
        return [_row(r) for r in listed.tokens]

    rows = run(as_json, act)

    def table(items: list[dict[str, Any]]) -> str:
        head = f"{'TOKEN ID':<16}  {'WORKSPACE':<16}  {'TIER':<6}  AUT  {'CREATED':<17}  {'REVOKED':<17}  NAME"
        lines = [head]
        for r in items:
            lines.append(
                f"{r['token_id']:<16}  {r['workspace'][:16]:<16}  {r['tier']:<6}  "
                f"{r['autonomy']:>3}  {_when(r['created_at_ms']):<17}  "
                f"{_when(r['revoked_at_ms']):<17}  {r['name']}"
            )
        return "\n".join(lines)

    emit(rows, as_json, table)


@token_group.command("revoke")
@click.argument("token_id")
@data_dir_option
@json_option
def revoke_command(token_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Revoke a token by id; its next request is refused."""

    def act() -> bool:
        with OperatorDesk(resolve_data_dir(data_dir)) as desk:
            return bool(desk.call("operator.token_revoke", {"token_id": token_id}).was_live)

    was_live = run(as_json, act)
    emit(
        {"token_id": token_id, "revoked": True, "was_live": was_live},
        as_json,
        lambda _: f"revoked {token_id}" + ("" if was_live else " (it was already revoked)"),
    )


def register(group: click.Group) -> None:
    """Add ``admin``."""
    group.add_command(admin_group)
