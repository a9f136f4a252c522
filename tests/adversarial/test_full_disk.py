"""A full file system is a typed, retryable refusal, and the service recovers (issue 10, item 4).

The attack (or accident): the volume holding the journal fills up. Writes used to answer 500
``internal error`` with tracebacks in the log (only ``BusyError`` was mapped at COMMIT, and
the refusal's own audit write raised outside the handler); on a 2 MiB volume the service never
recovered after space was freed (the WAL never reached SQLite's ~4 MiB auto-checkpoint); and
starting on a full disk said the journal was not a readable database.

Each test mounts its own 2 MiB tmpfs and always unmounts it; it needs root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.adversarial.served import Served

VOLUME = "2m"
EXIT_UNAVAILABLE = 8

pytestmark = pytest.mark.backend_only(
    "sqlite",
    reason="fills the tmpfs that holds the SQLite journal file; a PostgreSQL server's disk is not this process's (its disk-full error maps to STORAGE_FULL in store/postgres/storage.py)",
)


@pytest.fixture
def volume(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "vol"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={VOLUME},mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(volume: Path) -> Path:
    """Fill the volume to the last byte with one file; return it."""
    filler = volume / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler


def create(served: Served, token: str, i: int) -> httpx.Response:
    body = {"verb": "agent.run", "payload": {"i": i, "text": "x" * 1024}}
    return served.post("/v/agenttask.create", body, token)


def assert_typed(r: httpx.Response) -> None:
    assert r.status_code in (200, 503), r.text
    if r.status_code == 503:
        assert r.json()["code"] == "STORAGE_FULL", r.text
        assert int(r.headers["Retry-After"]) > 0


@pytest.mark.slow
def test_writes_on_a_full_disk_are_storage_full_and_the_service_recovers(volume):
    served = Served(volume / "data")
    token = served.admin
    try:
        for i in range(20):
            assert create(served, token, i).status_code == 200
        filler = fill(volume)
        answers = [create(served, token, 100 + i) for i in range(40)]
        for r in answers:
            assert_typed(r)
        assert any(r.status_code == 503 for r in answers)
        assert served.client.get("/v1/hub/health").status_code == 200
        # Free the space: the running service recovers by itself and keeps working for far
        # longer than the volume's size in WAL frames (the WAL is checkpointed on pressure).
        filler.unlink()
        deadline = time.monotonic() + 30
        while create(served, token, 1000).status_code != 200:
            assert time.monotonic() < deadline, "the service did not recover"
            time.sleep(0.2)
        statuses = []
        for i in range(400):
            r = create(served, token, 2000 + i)
            assert_typed(r)
            statuses.append(r.status_code)
        assert statuses.count(200) >= 390, statuses
        # What was acknowledged is there.
        r = served.post("/v/agenttask.list", {"limit": 1000}, token)
        assert r.status_code == 200
    finally:
        assert served.stop() == 0
    log = served.log()
    assert "Traceback" not in log, log
    assert "INTERNAL" not in log


def test_starting_on_a_full_disk_names_the_real_cause(volume):
    data = volume / "data"
    served = Served(data)
    served.stop()
    fill(volume)
    again = Served(data, expect_start=False)
    with contextlib.suppress(Exception):
        again.stop()
    log = again.log()
    assert not again.url, log
    assert again.proc.returncode == EXIT_UNAVAILABLE, log
    assert "STORAGE_FULL" in log, log
    assert "not a readable database" not in log
    assert "Traceback" not in log
