"""``agent-task retention run``: one retention sweep against the data directory, now.

``agent-task serve`` runs the same sweep on a schedule (``interval_minutes`` of
``DATA_DIR/retention.json``); this command is for cron, or to see what a sweep removes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from taskcore.retention import default_gate_index, run_retention_in

from taskcli.common import data_dir_option, emit, json_option, resolve_data_dir, run

__all__ = ["register"]


@click.group("retention")
def retention_group() -> None:
    """Prune old audit, idempotency, transition, transfer-byte and done-gate index rows."""


def _render(report: dict[str, Any]) -> str:
    if not report["ran"]:
        return "another process holds the sweep; nothing was done"
    lines = [f"{table:16} {n} deleted" for table, n in sorted(report["deleted"].items())]
    return "\n".join(lines)


@retention_group.command("run")
@data_dir_option
@click.option(
    "--gate-index",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Done-gate index to prune too (default: this host's, $AGENT_TASK_GATE_INDEX).",
)
@json_option
def run_command(data_dir: Path | None, gate_index: Path | None, as_json: bool) -> None:
    """Run one sweep with the ages of DATA_DIR/retention.json (safe defaults without it)."""
    directory = resolve_data_dir(data_dir)

    def act() -> dict[str, Any]:
        report = run_retention_in(directory, gate_index=gate_index or default_gate_index())
        return report.to_json()

    emit(run(as_json, act), as_json, _render)


def register(group: click.Group) -> None:
    """Add ``retention``."""
    group.add_command(retention_group)
