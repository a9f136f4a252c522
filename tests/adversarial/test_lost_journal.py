"""A lost or emptied journal never becomes an empty service (issue 10, item 3).

The attack (or accident): ``journal.sqlite`` is deleted or truncated in a data directory
that was used. ``serve`` used to create a fresh schema, then ask the operator to remove
``admin.token``; doing so started an empty service and every task was silently gone.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from taskcore.auth import FIRST_ADMIN_TOKEN_FILENAME
from taskcore.store.datadir import JOURNAL_NAME, prior_state

from tests.adversarial.served import AGENT_TASK, Served

EXIT_UNAVAILABLE = 8

pytestmark = pytest.mark.backend_only(
    "sqlite",
    reason="a lost or emptied journal *file* in a data dir is SQLite's; a PostgreSQL journal is a server's database, refused when missing by its migrations and readiness (tests/replicas, docs/deploy.md)",
)


def _used(tmp_path):
    """A data directory a service ran in: an admin token and one task."""
    data = tmp_path / "data"
    served = Served(data)
    try:
        r = served.post("/v/agenttask.create", {"verb": "agent.run"}, served.admin)
        assert r.status_code == 200, r.text
    finally:
        assert served.stop() == 0
    return data


def _refused(data, *args):
    served = Served(data, *args, expect_start=False)
    assert served.proc.returncode == EXIT_UNAVAILABLE, served.log()
    return served.log()


def test_the_admin_token_file_is_one_the_guard_knows(tmp_path):
    (tmp_path / FIRST_ADMIN_TOKEN_FILENAME).write_text("x")
    assert prior_state(tmp_path) == (FIRST_ADMIN_TOKEN_FILENAME,)


def test_a_deleted_journal_is_refused_and_nothing_is_created(tmp_path):
    data = _used(tmp_path)
    old_token = (data / FIRST_ADMIN_TOKEN_FILENAME).read_text()
    (data / JOURNAL_NAME).unlink()
    log = _refused(data)
    assert "JOURNAL_MISSING" in log
    assert "admin.token" in log
    assert "missing" in log
    assert "restore journal.sqlite" in log.lower()
    assert "--init" in log
    assert not (data / JOURNAL_NAME).exists()
    # The operator commands that would create a journal refuse too.
    done = subprocess.run(
        [
            AGENT_TASK,
            "admin",
            "token",
            "create",
            "--data-dir",
            str(data),
            "--workspace",
            "w",
            "--tier",
            "agent",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr
    assert not (data / JOURNAL_NAME).exists()
    assert (data / FIRST_ADMIN_TOKEN_FILENAME).read_text() == old_token


def test_a_zero_length_journal_is_refused_and_left_as_it_is(tmp_path):
    data = _used(tmp_path)
    with open(data / JOURNAL_NAME, "w"):
        pass
    log = _refused(data)
    assert "JOURNAL_MISSING" in log
    assert "empty" in log
    assert (data / JOURNAL_NAME).stat().st_size == 0


def test_a_lost_journal_with_its_wal_left_behind_is_refused(tmp_path):
    data = tmp_path / "data"
    served = Served(data)
    r = served.post("/v/agenttask.create", {"verb": "agent.run"}, served.admin)
    assert r.status_code == 200
    served.proc.send_signal(signal.SIGKILL)  # a crash: the WAL and its index stay
    served.proc.wait(30)
    assert (data / (JOURNAL_NAME + "-wal")).exists()
    (data / JOURNAL_NAME).unlink()
    (data / FIRST_ADMIN_TOKEN_FILENAME).unlink()
    log = _refused(data)
    assert "journal.sqlite-wal" in log
    assert not (data / JOURNAL_NAME).exists()


def test_collector_attempts_count_but_a_key_alone_does_not(tmp_path):
    data = tmp_path / "data"
    (data / "collector").mkdir(parents=True)
    (data / "collector" / "key.json").write_text("{}")
    served = Served(data)  # a key is made before enrolment: still a fresh place
    served.stop()
    (data / JOURNAL_NAME).unlink()
    (data / FIRST_ADMIN_TOKEN_FILENAME).unlink()
    (data / "collector" / "attempts" / "a").mkdir(parents=True)
    assert "collector/attempts" in _refused(data)


def test_init_starts_a_new_service_and_moves_the_old_files_aside(tmp_path):
    data = _used(tmp_path)
    old_token = (data / FIRST_ADMIN_TOKEN_FILENAME).read_text().strip()
    (data / JOURNAL_NAME).unlink()
    served = Served(data, "--init")
    try:
        assert "moved admin.token aside" in served.log()
        aside = [p for p in os.listdir(data) if p.startswith("admin.token.orphaned-")]
        assert len(aside) == 1
        assert (data / aside[0]).read_text().strip() == old_token
        new_token = served.admin
        assert new_token != old_token
        assert served.post("/v/agenttask.list", {}, old_token).status_code == 401
        r = served.post("/v/agenttask.list", {}, new_token)
        assert r.status_code == 200
        assert r.json()["tasks"] == []
    finally:
        assert served.stop() == 0
    # Started again without --init, the new journal is simply used.
    again = Served(data)
    again.stop()


def test_a_fresh_default_data_dir_still_just_works(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "AGENT_TASK_DATA_DIR"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.Popen(
        [AGENT_TASK, "serve", "--port", "0"], stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "serving http://" in line:
                break
        assert any("wrote the first admin token" in line for line in lines), lines
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0


@pytest.mark.parametrize("leftover", ["journal.sqlite-shm", "journal.sqlite-journal"])
def test_other_journal_side_files_count(tmp_path, leftover):
    data = tmp_path / "data"
    data.mkdir()
    (data / leftover).write_bytes(b"\0" * 16)
    assert leftover in _refused(data)
    assert not (data / JOURNAL_NAME).exists()
