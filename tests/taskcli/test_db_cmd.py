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
