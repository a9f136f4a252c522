"""Collector overhead and task-stop hook latency, beside same-run baselines.

    .venv/bin/python benchmarks/bench_collector.py [--runs 5] [--hook-runs 10]

Set-up (in one temporary directory): a git repository with a small pytest suite, an authority
data dir (repository, TEST requirement, task-only profile, enrolled collector key, command
collector profile), ``agent-task serve``'s application on an ephemeral port (uvicorn in a
thread) and an agent token.

Measured:

* **collect to receipt**: for each run a new commit is checkpointed (not timed), then the time
  from the start of a collection to a qualified receipt: qualification, ``collector_claim``,
  the descriptor, the local-authority recheck, the status recheck, snapshot + run + record +
  sign + fsynced retention, upload (import validation), qualification, ``collector_finalize``,
  qualification. The recipe's own time (``ExecutionRecord.duration_ms``) is subtracted: the
  remainder is what the product adds. Two recipes: ``/bin/true`` (the overhead floor) and
  ``python -m pytest -q`` on the small suite. Measured in process (``collect_once``) and as the
  installed command (``agent-task collect`` in a subprocess, start-up included).
* baseline for the same runs: the recipe's argv run directly with ``subprocess.run`` in the work
  tree (no snapshot, no sandbox, no signing, no service).
* **task-stop latency** on a qualified subject (the pass path: two local reads, one
  ``qualification`` over HTTP), in process (``run_hook``) and as the installed hook command
  (``agent-task task-stop`` in a subprocess reading its payload on stdin), beside the
  ``qualification`` call alone over HTTP and ``python -c pass``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
from taskcli.common import ServiceClient
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.authority import (
    enroll_executor,
    install_requirement,
    register_profile,
    register_repository,
)
from taskcore.authority.operator import collector_test_requirement
from taskcore.clock import SystemClock
from taskcore.collector.client import collect_once
from taskcore.collector.runtime import detect_sandbox, probe_runtime
from taskcore.collector.state import CollectorState, key_id_for
from taskcore.collector.stophook import run_hook
from taskcore.contract import CommandCollectorProfile, CommandRecipe
from taskcore.contract.collector import DEFAULT_ISOLATION
from taskcore.contract.collector_records import runtime_identity_digest
from taskcore.evidence.profiles import install_collector_profile
from taskcore.service import Service
from taskcore.store import open_storage
from taskhttp.app import create_app
from taskhttp.server import BackgroundServer

ROOT = Path(__file__).resolve().parent.parent
AGENT_TASK = ROOT / ".venv" / "bin" / "agent-task"
PY = sys.executable
# The sandbox shows the system, the snapshot and /tmp only: expose the interpreter read-only.
ISOLATION = attrs.evolve(
    DEFAULT_ISOLATION, read_only_paths=tuple(sorted({sys.prefix, sys.base_prefix}))
)


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@e", *args],
        check=True,
        capture_output=True,
    )


class Bench:
    def __init__(self, tmp: Path, argv: tuple[str, ...], name: str) -> None:
        self.tmp = tmp / name
        self.tmp.mkdir()
        self.argv = argv
        self.repo = self.tmp / "repo"
        (self.repo / "tests").mkdir(parents=True)
        (self.repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (self.repo / "tests" / "test_calc.py").write_text(
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
        )
        (self.repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "one")
        self.data = self.tmp / "data"
        self.state_dir = self.tmp / "collector"
        self.state = CollectorState.open(self.state_dir, create=True)
        key = self.state.generate_key()
        clock = SystemClock()
        storage = open_storage(self.data, create=True)
        register_repository(
            storage, clock, workspace="b", repository_id="calc", work_tree=self.repo
        )
        req = install_requirement(
            storage,
            clock,
            repository_id="calc",
            requirement=collector_test_requirement("tests", "ok"),
        )
        register_profile(
            storage,
            clock,
            repository_id="calc",
            profile_id="default",
            target="main",
            requirement_digest=req.requirement_digest,
        )
        enroll_executor(
            storage,
            clock,
            registration_id="reg",
            executor_id="host",
            repository_id="calc",
            step_id="tests",
            verification_key_id=key_id_for(key.public_key),
            public_key=key.public_key,
        )
        recipe = CommandRecipe(
            argv=argv,
            working_directory=".",
            environment_allowlist=("PYTEST_DISABLE_PLUGIN_AUTOLOAD",),
            timeout_ms=120_000,
            output_limit_bytes=65536,
        )
        self.recipe = recipe
        install_collector_profile(
            storage,
            clock,
            profile=CommandCollectorProfile(
                version=1,
                kind="command",
                profile_id="cp",
                repository_id="calc",
                workflow_profile_id="default",
                step_id="tests",
                registration_id="reg",
                registration_epoch=1,
                recipe=recipe,
                runtime_identity_sha256=runtime_identity_digest(
                    probe_runtime(recipe, isolation=ISOLATION)
                ),
                isolation=ISOLATION,
            ),
        )
        storage.close()
        self.service = Service.open(self.data)
        token = issue_token(self.service.storage, clock, workspace="b", tier=Tier.AGENT).token
        self.token_file = self.tmp / "agent.token"
        self.token_file.write_text(token + "\n")
        os.chmod(self.token_file, 0o600)
        self.server = BackgroundServer(create_app(self.service))
        self.url = self.server.start()
        self.client = ServiceClient(self.url, self.token_file, timeout=120)
        self.n = 0

    def close(self) -> None:
        self.server.stop()
        self.service.close()

    def new_subject(self, change: str) -> None:
        self.n += 1
        (self.repo / "notes.txt").write_text(f"run {self.n}\n")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", f"run {self.n}")
        head = (
            subprocess.run(
                ["git", "-C", str(self.repo), "rev-parse", "HEAD"], capture_output=True, check=True
            )
            .stdout.decode()
            .strip()
        )
        self.client.workflow(
            "calc",
            "default",
            "checkpoint",
            json.dumps({"version": 1, "change_id": change, "commit": head, "context": ""}).encode(),
        )

    def collect_in_process(self, change: str) -> tuple[float, float]:
        self.new_subject(change)
        started = time.perf_counter()
        out = collect_once(
            self.client,
            repository="calc",
            profile="default",
            change=change,
            data_dir=self.data,
            state=self.state,
            lease_ms=600_000,
        )
        total = (time.perf_counter() - started) * 1000
        assert out["qualification"]["qualified"], out
        return total, float(out["command_ms"])

    def collect_cli(self, change: str) -> tuple[float, float]:
        self.new_subject(change)
        env = dict(os.environ)
        env.update(
            AGENT_TASK_URL=self.url,
            AGENT_TASK_TOKEN_FILE=str(self.token_file),
            AGENT_TASK_REPOSITORY="calc",
            AGENT_TASK_PROFILE="default",
        )
        started = time.perf_counter()
        done = subprocess.run(
            [
                str(AGENT_TASK),
                "collect",
                change,
                "--data-dir",
                str(self.data),
                "--state-dir",
                str(self.state_dir),
                "--json",
            ],
            capture_output=True,
            env=env,
            check=True,
        )
        total = (time.perf_counter() - started) * 1000
        out = json.loads(done.stdout)
        assert out["qualification"]["qualified"], out
        return total, float(out["command_ms"])

    def direct(self) -> float:
        started = time.perf_counter()
        subprocess.run(
            list(self.argv),
            cwd=self.repo,
            capture_output=True,
            check=True,
            env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        )
        return (time.perf_counter() - started) * 1000


def median(values: list[float]) -> float:
    return statistics.median(values)


def bench_collect(bench: Bench, runs: int, label: str) -> dict[str, Any]:
    inproc, cli, direct = [], [], []
    for i in range(runs):  # interleaved, so load changes hit every contender alike
        direct.append(bench.direct())
        total, command = bench.collect_in_process(f"inproc-{i}")
        inproc.append((total, command))
        total, command = bench.collect_cli(f"cli-{i}")
        cli.append((total, command))
    row = {
        "recipe": label,
        "direct_ms": median(direct),
        "inproc_total_ms": median([t for t, _ in inproc]),
        "inproc_command_ms": median([c for _, c in inproc]),
        "inproc_overhead_ms": median([t - c for t, c in inproc]),
        "cli_total_ms": median([t for t, _ in cli]),
        "cli_overhead_ms": median([t - c for t, c in cli]),
    }
    row["ratio_inproc_to_direct"] = row["inproc_total_ms"] / row["direct_ms"]
    row["ratio_cli_to_direct"] = row["cli_total_ms"] / row["direct_ms"]
    return row


def bench_hook(bench: Bench, runs: int) -> dict[str, float]:
    bench.new_subject("hook")
    collect_once(
        bench.client,
        repository="calc",
        profile="default",
        change="hook",
        data_dir=bench.data,
        state=bench.state,
        lease_ms=600_000,
    )
    payload = b'{"session_id": "bench", "hook_event_name": "Stop", "stop_hook_active": false}'
    inproc, cli, call, bare = [], [], [], []
    body = json.dumps({"version": 1, "change_id": "hook"}).encode()
    env = dict(os.environ, AGENT_TASK_STOP_DIR=str(bench.tmp / "stop"))
    os.environ["AGENT_TASK_STOP_DIR"] = str(bench.tmp / "stop")

    def connect(token_file: Path, timeout: float) -> ServiceClient:
        return ServiceClient(bench.url, token_file, timeout=timeout)

    for _ in range(runs):
        started = time.perf_counter()
        status, text = run_hook(
            "claude-code",
            change="hook",
            repository="calc",
            profile="default",
            token_file=bench.token_file,
            workspace=bench.repo,
            data_dir=bench.data,
            stdin=io.BytesIO(payload),
            connect=connect,
        )
        inproc.append((time.perf_counter() - started) * 1000)
        assert (status, text) == (0, ""), text
        started = time.perf_counter()
        done = subprocess.run(
            [
                str(AGENT_TASK),
                "task-stop",
                "hook",
                "--endpoint",
                bench.url,
                "--repository",
                "calc",
                "--profile",
                "default",
                "--token-file",
                str(bench.token_file),
                "--workspace",
                str(bench.repo),
                "--data-dir",
                str(bench.data),
            ],
            input=payload,
            capture_output=True,
            env=env,
            check=False,
        )
        cli.append((time.perf_counter() - started) * 1000)
        assert done.returncode == 0, done.stderr
        assert not done.stdout.strip(), done.stdout
        started = time.perf_counter()
        bench.client.workflow("calc", "default", "qualification", body)
        call.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        subprocess.run([PY, "-c", "pass"], check=True)
        bare.append((time.perf_counter() - started) * 1000)
    return {
        "hook_inproc_ms": median(inproc),
        "hook_cli_ms": median(cli),
        "qualification_call_ms": median(call),
        "python_pass_ms": median(bare),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hook-runs", type=int, default=10)
    args = parser.parse_args()
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    tmp = Path(tempfile.mkdtemp(prefix="bench-collector-", dir=os.environ.get("BENCH_DIR")))
    print(f"sandbox: {detect_sandbox().value}; runs: {args.runs}; hook runs: {args.hook_runs}")
    rows = []
    for label, argv in (
        ("/bin/true", ("/bin/true",)),
        ("pytest -q (1 test)", (PY, "-m", "pytest", "-q", "-p", "no:cacheprovider")),
    ):
        bench = Bench(tmp, argv, label.split()[0].strip("/").replace("/", "-"))
        try:
            rows.append(bench_collect(bench, args.runs, label))
            if label.startswith("pytest"):
                hook = bench_hook(bench, args.hook_runs)
        finally:
            bench.close()
    print("\ncollect to receipt (medians, ms)")
    print(
        "| recipe | direct run | in-process total | command | overhead | CLI total | CLI overhead | in-process / direct | CLI / direct |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['recipe']} | {r['direct_ms']:.0f} | {r['inproc_total_ms']:.0f} | "
            f"{r['inproc_command_ms']:.0f} | {r['inproc_overhead_ms']:.0f} | "
            f"{r['cli_total_ms']:.0f} | {r['cli_overhead_ms']:.0f} | "
            f"{r['ratio_inproc_to_direct']:.1f}x | {r['ratio_cli_to_direct']:.1f}x |"
        )
    print("\ntask-stop on a qualified subject (medians, ms)")
    print(
        "| hook in process | hook command | qualification call alone | python -c pass | in-process / call | command / call |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| {hook['hook_inproc_ms']:.0f} | {hook['hook_cli_ms']:.0f} | "
        f"{hook['qualification_call_ms']:.1f} | {hook['python_pass_ms']:.0f} | "
        f"{hook['hook_inproc_ms'] / hook['qualification_call_ms']:.1f}x | "
        f"{hook['hook_cli_ms'] / hook['qualification_call_ms']:.1f}x |"
    )


if __name__ == "__main__":
    main()
