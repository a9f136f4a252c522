"""``agent-task retention run``: one sweep against a data directory, readable or JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from taskcore import Service

AGENT_TASK = [str(Path(sys.executable).with_name("agent-task"))]


def _run(*args):
    return subprocess.run(
        [*AGENT_TASK, "retention", "run", *args], capture_output=True, text=True, timeout=120
    )


def test_a_sweep_reports_each_table_as_json(tmp_path):
    Service.open(tmp_path / "data").close()
    done = _run(
        "--data-dir", str(tmp_path / "data"), "--gate-index", str(tmp_path / "none"), "--json"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ran"] is True
    assert set(report["deleted"]) == {
        "audit",
        "idempotency",
        "transitions",
        "transfer_bytes",
        "checkpoints",
        "done_gate",
    }
    readable = _run("--data-dir", str(tmp_path / "data"), "--gate-index", str(tmp_path / "none"))
    assert "audit" in readable.stdout
    assert "deleted" in readable.stdout


@pytest.mark.backend_only(
    "sqlite", reason="a missing data dir means a missing journal only on SQLite"
)
def test_a_missing_journal_is_not_found_and_nothing_is_created(tmp_path):
    done = _run("--data-dir", str(tmp_path / "nothing"))
    assert done.returncode == 5
    assert "NOT_FOUND" in done.stderr
    assert not (tmp_path / "nothing").exists()


def test_a_bad_retention_file_is_refused_with_its_path(tmp_path):
    Service.open(tmp_path / "data").close()
    (tmp_path / "data" / "retention.json").write_text('{"audit_days": -1}')
    done = _run("--data-dir", str(tmp_path / "data"))
    assert done.returncode == 3
    assert "retention.json" in done.stderr
