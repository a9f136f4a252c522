"""``agent-task db migrate`` / ``db status``, on both backends (``backend`` in tests/conftest.py)."""

import json
import os

import psycopg
import pytest

from tests.taskcli.frontdoor import agent_task


def _journal(path):
    from taskcore.auth import TokenAdmin

    with TokenAdmin(path, create=True):
        pass
    return path


def test_status_and_migrate_report_the_backend_and_every_component(tmp_path, backend):
    _journal(tmp_path)
    status = agent_task("db", "status", "--data-dir", str(tmp_path), "--json")
    assert status.exit_code == 0, status.output
    report = json.loads(status.stdout)
    assert report["backend"] == backend
    assert set(report["schema"]) >= {"audit", "tokens", "queue", "journal", "collector"}
    migrated = agent_task("db", "migrate", "--data-dir", str(tmp_path), "--json")
    assert migrated.exit_code == 0, migrated.output
    assert json.loads(migrated.stdout) == {**report, "applied": []}  # already current


@pytest.mark.backend_only("postgresql", reason="migrating an empty shared database")
def test_migrate_an_empty_database_once_then_nothing(tmp_path, backend):
    url = os.environ["AGENT_TASK_DATABASE"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    behind = agent_task("db", "status", "--data-dir", str(tmp_path), "--database", url)
    assert behind.exit_code != 0  # status never migrates; it says how
    assert "agent-task db migrate" in behind.output
    first = agent_task("db", "migrate", "--data-dir", str(tmp_path), "--database", url, "--json")
    assert first.exit_code == 0, first.output
    assert "queue 1" in json.loads(first.stdout)["applied"]
    again = agent_task("db", "migrate", "--database", url, "--data-dir", str(tmp_path))
    assert again.exit_code == 0
    assert "nothing (up to date)" in again.stdout
    assert "backend: postgresql" in again.stdout


def test_a_database_url_must_be_postgresql(tmp_path):
    result = agent_task("db", "status", "--data-dir", str(tmp_path), "--database", "mysql://x/y")
    assert result.exit_code == 2
    assert "postgresql://" in result.output


# -- backup, restore, verify ------------------------------------------------------------------


@pytest.mark.backend_only("sqlite", reason="the SQLite journal is the file backed up")
def test_backup_restore_verify_round_trip(tmp_path, backend):
    data = _journal(tmp_path / "d")
    backup = agent_task(
        "db", "backup", "--to", str(tmp_path / "b.sqlite"), "--data-dir", str(data), "--json"
    )
    assert backup.exit_code == 0, backup.output
    assert backup.stdout.count("\n") == 1  # one compact document
    report = json.loads(backup.stdout)
    assert report["file"] == str(tmp_path / "b.sqlite")
    assert report["schema"]["queue"] >= 1
    human = agent_task(
        "db", "verify", "--file", str(tmp_path / "b.sqlite"), "--data-dir", str(data)
    )
    assert human.exit_code == 0, human.output
    assert human.stdout.startswith("ok: sqlite")
    assert "ok  integrity: ok" in human.stdout
    restored = agent_task("db", "restore", str(tmp_path / "b.sqlite"), "--data-dir", str(data))
    assert restored.exit_code == 0, restored.output
    assert "kept the replaced journal: " in restored.stdout
    verified = agent_task("db", "verify", "--data-dir", str(data), "--json")
    assert verified.exit_code == 0
    assert json.loads(verified.stdout)["ok"] is True


@pytest.mark.backend_only("sqlite", reason="a hole in SQLite's rowid sequence")
def test_verify_prints_the_report_then_exits_8_when_a_check_fails(tmp_path, backend):
    import apsw

    data = _journal(tmp_path / "d")
    for _ in range(3):
        assert agent_task("admin", "token", "create", "--workspace", "w", "--tier", "agent",
                          "--data-dir", str(data)).exit_code == 0  # fmt: skip
    conn = apsw.Connection(str(data / "journal.sqlite"))
    conn.execute("DELETE FROM audit_event WHERE seq = 2")
    conn.close()
    result = agent_task("db", "verify", "--data-dir", str(data))
    assert result.exit_code == 8
    assert result.stdout.startswith("FAILED: sqlite")
    assert "BAD audit_sequence" in result.stdout
    assert "[INTEGRITY_FAILURE]" in result.stderr


@pytest.mark.backend_only("sqlite", reason="the data-dir hold is the SQLite journal's")
def test_restore_is_refused_while_a_service_holds_the_journal(tmp_path, backend):
    from taskcore.service import Service

    data = _journal(tmp_path / "d")
    assert (
        agent_task("db", "backup", "--to", str(tmp_path / "b"), "--data-dir", str(data)).exit_code
        == 0
    )
    service = Service.open(data)
    try:
        result = agent_task("db", "restore", str(tmp_path / "b"), "--data-dir", str(data), "--json")
        assert result.exit_code == 6
        assert json.loads(result.stderr)["code"] == "JOURNAL_IN_USE"
    finally:
        service.close()


@pytest.mark.backend_only("postgresql", reason="PostgreSQL's backup is pg_dump")
def test_backup_on_postgresql_prints_the_pg_dump_line(tmp_path, backend):
    result = agent_task(
        "db", "backup", "--to", str(tmp_path / "b.dump"), "--data-dir", str(tmp_path)
    )
    assert result.exit_code == 3
    assert "pg_dump --format=custom --no-owner --no-privileges --file" in result.stderr
    assert "[BAD_INPUT]" in result.stderr
    verify = agent_task("db", "verify", "--data-dir", str(_journal(tmp_path / "d")), "--json")
    assert verify.exit_code == 0, verify.output
    assert json.loads(verify.stdout)["backend"] == "postgresql"
