"""Every benchmark runs once at its smallest size, so none rots (issue 30).

No figure is asserted here (speed is measured in ``benchmarks/``, never as a timed test):
each script must exit 0 and print its table, at the smallest size its options allow. The
benchmarks that need PostgreSQL get this session's server (``tests/conftest.py``; skipped
without one on a developer's machine, failed under CI); the ones comparing with another
checkout compare this checkout with itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci import skip_or_fail
from tests.conftest import DEFAULT_SERVER, SERVER_ENV

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"

# (script, arguments at the smallest size, what it must print, needs PostgreSQL)
CASES: list[tuple[str, tuple[str, ...], str, bool]] = [
    ("bench_codec.py", ("--seconds", "0.01", "--rounds", "1"), "", False),
    ("bench_collector.py", ("--runs", "1", "--hook-runs", "1"), "", False),
    (
        "bench_commit_pages.py",
        ("--pages", "1,2", "--commits", "3", "--rounds", "1"),
        "ms per page",
        False,
    ),
    ("bench_gate.py", ("--sizes", "1", "--runs", "1"), "", False),
    ("bench_http.py", ("--clients", "1", "--cycles", "5", "--rounds", "1"), "echo/queue", False),
    ("bench_journal.py", ("--quick",), "", False),
    ("bench_landing.py", ("--runs", "1", "--files", "10"), "", False),
    ("bench_oauth.py", ("--rounds", "1", "--calls", "5"), "", False),
    ("bench_observation.py", ("--seconds", "0.01", "--repeat", "1"), "", False),
    (
        "bench_postgres.py",
        ("--cycles", "8", "--rounds", "1", "--replicas", "1"),
        "vs Procrastinate",
        True,
    ),
    (
        "bench_queue.py",
        ("--cycles", "20", "--sizes", "1000", "--probes", "5", "--rounds", "1"),
        "",
        False,
    ),
    (
        "bench_queueflow.py",
        ("--cycles", "10", "--rounds", "1", "--batch", "5", "--blocked", "10", "--probes", "2"),
        "",
        False,
    ),
    ("bench_sandbox.py", ("--runs", "1"), "", False),
    ("bench_session_grant.py", ("--rounds", "1"), "", False),
    (
        "bench_waiting.py",
        ("--wakes", "5", "--waiters", "10", "--calls", "5", "--rounds", "1"),
        "",
        True,
    ),
    (
        "bench_workers.py",
        ("--clients", "2", "--cycles", "8", "--rounds", "1"),
        "goal >= 1.4x",
        False,
    ),
    ("events_cost.py", ("--rounds", "1", "--cycles", "5"), "", False),
    ("http_cpu_ab.py", ("--before", str(ROOT), "--rounds", "1", "--pairs", "5"), "", False),
    ("install_size.py", (), "", False),
    (
        "run_all.py",
        ("--quick", "--only", "intake,hooks,queue,workers,postgres", "--no-task-stop"),
        "| meets |",
        True,
    ),
    ("wal_pages.py", ("--cycles", "3"), "frames per commit", False),
]


def test_every_benchmark_has_a_case():
    scripts = {path.name for path in BENCH.glob("*.py") if not path.name.startswith("_")}
    assert scripts == {case[0] for case in CASES}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "prints", "postgres"), CASES, ids=[case[0] for case in CASES]
)
def test_the_benchmark_runs_at_its_smallest_size(
    script: str, args: tuple[str, ...], prints: str, postgres: bool, request, tmp_path
) -> None:
    env = {**os.environ, "BENCH_DIR": str(tmp_path)}
    env.pop("AGENT_TASK_DATABASE", None)
    if postgres:
        request.getfixturevalue("postgres_url")  # skips (fails under CI) without a server
        env[SERVER_ENV] = os.environ.get(SERVER_ENV, DEFAULT_SERVER)  # where it makes its DBs
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=900,
        check=False,
    )
    if done.returncode != 0 and "not available" in done.stderr + done.stdout:
        skip_or_fail(f"{script}: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-2000:]}"
    assert done.stdout.strip(), f"{script} printed nothing"
    assert prints in done.stdout
