"""``agent-task db``: the journal's schema (migrate, status) and its safety (backup, verify).

``migrate`` brings the journal to this release's schema and prints what it applied: the
PostgreSQL database given by ``--database`` (or ``$AGENT_TASK_DATABASE``), else the SQLite
journal in ``--data-dir``. On PostgreSQL the migrations run under an advisory lock, so running
it from several hosts at once applies each migration once (``agent-task serve`` does the same
on start). ``status`` only reads: backend and recorded versions; a database that is behind or
newer than this release is an error saying which.

``backup --to FILE`` copies the SQLite journal while the service runs (one consistent copy,
checked before it is kept) and prints what the copy holds; on PostgreSQL it prints the
``pg_dump`` line to run instead. ``restore FILE`` puts a backup in place in a data dir no
service holds, keeping the journal it replaces beside it. ``verify`` checks a data dir, a
backup file (``--file``) or a PostgreSQL database and exits 8 (``INTEGRITY_FAILURE``) when a
check fails. The files are the operator's, named on the command line
(:mod:`taskcore.dbadmin` decides everything).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from taskcore.errors import ErrorCode, TaskError

from taskcli.common import data_dir_option, emit, fail, json_option, resolve_data_dir, run

__all__ = ["register"]


@click.group("db")
def db_group() -> None:
    """The journal: migrate it, show its versions, back it up, restore it, verify it."""


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


def _counts(report: dict[str, Any]) -> list[str]:
    audit = report["audit"]
    seq = "" if audit["first_seq"] is None else f" (seq {audit['first_seq']}..{audit['last_seq']})"
    rows = [f"audit events: {audit['events']}{seq}"]
    rows.append("schema: " + ", ".join(f"{n} {v}" for n, v in report["schema"].items()))
    held = {t: n for t, n in report["counts"].items() if n and t != "schema_versions"}
    rows.append("rows: " + ", ".join(f"{t} {n}" for t, n in held.items()))
    return rows


def _render_backup(report: dict[str, Any]) -> str:
    head = f"backup: {report['file']} ({report['bytes']} bytes, integrity ok)"
    return "\n".join([head, *_counts(report)])


def _render_restore(report: dict[str, Any]) -> str:
    lines = [f"restored: {report['journal']} from {report['restored_from']}"]
    lines += [f"kept the replaced journal: {p}" for p in report["replaced"]] or [
        "there was no journal to replace"
    ]
    return "\n".join(lines + _counts(report))


def _render_verify(report: dict[str, Any]) -> str:
    lines = [f"{'ok' if report['ok'] else 'FAILED'}: {report['backend']} {report['journal']}"]
    lines += [
        f"  {'ok ' if c['ok'] else 'BAD'} {c['check']}: {c['detail']}" for c in report["checks"]
    ]
    return "\n".join(lines + _counts(report))


@db_group.command("backup")
@click.option(
    "--to",
    "target",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The new backup file (never overwritten).",
)
@data_dir_option
@json_option
def backup_command(target: Path, data_dir: Path | None, as_json: bool) -> None:
    """Copy the SQLite journal to FILE while the service runs, checked; print what it holds.

    On PostgreSQL nothing is copied: the answer names the pg_dump line to run.
    """
    directory = resolve_data_dir(data_dir)

    def act() -> dict[str, Any]:
        from taskcore.dbadmin import backup_journal

        return backup_journal(directory, target)

    emit(run(as_json, act), as_json, _render_backup)


@db_group.command("restore")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@data_dir_option
@json_option
def restore_command(source: Path, data_dir: Path | None, as_json: bool) -> None:
    """Put the backup SOURCE in place as the journal (no service may hold it).

    The journal it replaces is kept beside it (journal.sqlite.replaced-<UTC time>).
    """
    directory = resolve_data_dir(data_dir)

    def act() -> dict[str, Any]:
        from taskcore.dbadmin import restore_journal

        return restore_journal(directory, source)

    emit(run(as_json, act), as_json, _render_restore)


@db_group.command("verify")
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A backup file to check instead of the data dir's journal.",
)
@data_dir_option
@json_option
def verify_command(file: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Check a journal: integrity, schema versions, counts, the audit sequence (read-only).

    Exits 8 (INTEGRITY_FAILURE) when a check fails, after printing the report.
    """
    directory = resolve_data_dir(data_dir)

    def act() -> dict[str, Any]:
        from taskcore.dbadmin import verify_journal

        return verify_journal(directory, file=file)

    report = run(as_json, act)
    emit(report, as_json, _render_verify)
    if not report["ok"]:
        failed = ", ".join(c["check"] for c in report["checks"] if not c["ok"])
        fail(TaskError(ErrorCode.INTEGRITY_FAILURE, f"the journal failed: {failed}"), as_json)


def register(group: click.Group) -> None:
    """Add ``db``."""
    group.add_command(db_group)
