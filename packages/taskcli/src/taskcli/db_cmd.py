"""``agent-task db migrate`` and ``agent-task db status``: the journal's schema.

``migrate`` brings the journal to this release's schema and prints what it applied: the
PostgreSQL database given by ``--database`` (or ``$AGENT_TASK_DATABASE``), else the SQLite
journal in ``--data-dir``. On PostgreSQL the migrations run under an advisory lock, so running
it from several hosts at once applies each migration once (``agent-task serve`` does the same
on start). ``status`` only reads: backend and recorded versions; a database that is behind or
newer than this release is an error saying which.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from taskcli.common import data_dir_option, emit, json_option, resolve_data_dir, run

__all__ = ["register"]


@click.group("db")
def db_group() -> None:
    """The journal's schema: migrate it, or show its backend and versions."""


def _render(report: dict[str, Any]) -> str:
    lines = [f"backend: {report['backend']}"]
    if "applied" in report:
        applied = report["applied"]
        lines.append("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))
    lines += [f"{name:10} {version}" for name, version in sorted(report["schema"].items())]
    return "\n".join(lines)


@db_group.command("migrate")
@data_dir_option
@json_option
def migrate_command(data_dir: Path | None, as_json: bool) -> None:
    """Apply this release's migrations to the journal (creating nothing else)."""
    directory = resolve_data_dir(data_dir)

    def act() -> dict[str, Any]:
        from taskcore.dbadmin import migrate_journal

        return migrate_journal(directory)

    emit(run(as_json, act), as_json, _render)


@db_group.command("status")
@data_dir_option
@json_option
def status_command(data_dir: Path | None, as_json: bool) -> None:
    """Print the backend and the recorded schema versions (read-only)."""
    directory = resolve_data_dir(data_dir)

    def act() -> dict[str, Any]:
        from taskcore.dbadmin import journal_status

        return journal_status(directory)

    emit(run(as_json, act), as_json, _render)


def register(group: click.Group) -> None:
    """Add ``db``."""
    group.add_command(db_group)
