"""What the pre-receive landing hook adds to a push, beside the same push without the hook.

    .venv/bin/python benchmarks/bench_landing.py [--runs 9] [--files 10,1000]

Set-up (one temporary directory per size): a git repository of N small files, an authority
data dir (repository, TEST requirement, profile, enrolled key, ``/bin/true`` collector
profile), ``agent-task serve``'s application on an ephemeral port, and one qualified commit
(checkpointed and collected). Two bare clones stand for the git host: one with the landing
hook installed (``taskcore.evidence.landing_install``), one without.

Measured, interleaved in the same run (medians, ms):

* **push with the hook**: reset the bare repository's ``main`` to the parent commit (not
  timed), then ``git push`` of the qualified commit; the hook computes the revision of the
  pushed commit and asks ``workflow.landing_check`` over HTTP;
* **push without a hook**: the same push into the other bare repository (the baseline);
* the ``landing_check`` call alone over HTTP (the same request the hook sends, from this
  process) and ``python3 -c pass`` (the hook's interpreter start-up floor).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from taskcli.common import ServiceClient
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.authority import (
    enroll_executor,
    install_requirement,
    register_profile,
    register_repository,
)
from taskcore.authority.gitrev import git_revision
from taskcore.authority.operator import collector_test_requirement
from taskcore.clock import SystemClock
from taskcore.collector.client import collect_once
from taskcore.collector.runtime import probe_runtime
from taskcore.collector.state import CollectorState, key_id_for
from taskcore.contract import CommandCollectorProfile, CommandRecipe
from taskcore.contract.collector_records import runtime_identity_digest
from taskcore.evidence.landing_install import HookSettings, install_hook
from taskcore.evidence.profiles import install_collector_profile
from taskcore.service import Service
from taskcore.store import open_storage
from taskhttp.app import create_app
from taskhttp.server import BackgroundServer


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@e", *args],
        check=True,
        capture_output=True,
    )
    return done.stdout.decode().strip()


class World:
    def __init__(self, tmp: Path, files: int) -> None:
        self.repo = tmp / "repo"
        (self.repo / "src").mkdir(parents=True)
        for i in range(files):
            (self.repo / "src" / f"m{i}.py").write_text(f"VALUE = {i}\n" * 20)
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "base")
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.data = tmp / "data"
        self.state = CollectorState.open(tmp / "collector", create=True)
        key = self.state.generate_key()
        clock = SystemClock()
        storage = open_storage(self.data, create=True)
        register_repository(storage, clock, workspace="b", repository_id="r", work_tree=self.repo)
        req = install_requirement(
            storage, clock, repository_id="r", requirement=collector_test_requirement("t", "ok")
        )
        register_profile(
            storage,
            clock,
            repository_id="r",
            profile_id="default",
            target="main",
            requirement_digest=req.requirement_digest,
        )
        enroll_executor(
            storage,
            clock,
            registration_id="reg",
            executor_id="host",
            repository_id="r",
            step_id="t",
            verification_key_id=key_id_for(key.public_key),
            public_key=key.public_key,
        )
        recipe = CommandRecipe(
            argv=("/bin/true",),
            working_directory=".",
            environment_allowlist=(),
            timeout_ms=60_000,
            output_limit_bytes=4096,
        )
        install_collector_profile(
            storage,
            clock,
            profile=CommandCollectorProfile(
                version=1,
                kind="command",
                profile_id="cp",
                repository_id="r",
                workflow_profile_id="default",
                step_id="t",
                registration_id="reg",
                registration_epoch=1,
                recipe=recipe,
                runtime_identity_sha256=runtime_identity_digest(probe_runtime(recipe)),
            ),
        )
        storage.close()
        self.service = Service.open(self.data)
        self.token = issue_token(self.service.storage, clock, workspace="b", tier=Tier.AGENT).token
        self.token_file = tmp / "agent.token"
        self.token_file.write_text(self.token + "\n")
        os.chmod(self.token_file, 0o600)
        self.server = BackgroundServer(create_app(self.service))
        self.url = self.server.start()
        client = ServiceClient(self.url, self.token_file, timeout=120)
        (self.repo / "src" / "m0.py").write_text("VALUE = -1\n")
        git(self.repo, "commit", "-qam", "qualified change")
        self.head = git(self.repo, "rev-parse", "HEAD")
        body = {"version": 1, "change_id": "c1", "commit": self.head, "context": ""}
        client.workflow("r", "default", "checkpoint", json.dumps(body).encode())
        out = collect_once(
            client,
            repository="r",
            profile="default",
            change="c1",
            data_dir=self.data,
            state=self.state,
            lease_ms=600_000,
        )
        assert out["qualification"]["qualified"], out
        self.revision = git_revision(self.repo, self.head)
        self.hooked = tmp / "hooked.git"
        self.plain = tmp / "plain.git"
        for bare in (self.hooked, self.plain):
            subprocess.run(["git", "clone", "-q", "--bare", str(self.repo), str(bare)], check=True)
        install_hook(
            self.hooked,
            HookSettings(
                url=self.url,
                repository="r",
                profile="default",
                protect=("refs/heads/main",),
                token_file=str(self.token_file),
                timeout=30,
                fail_open=False,
            ),
        )

    def push(self, bare: Path) -> float:
        git(bare, "update-ref", "refs/heads/main", self.base)
        started = time.perf_counter()
        done = subprocess.run(
            ["git", "-C", str(self.repo), "push", "-q", str(bare), "HEAD:refs/heads/main"],
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = (time.perf_counter() - started) * 1000
        assert done.returncode == 0, done.stderr
        assert git(bare, "rev-parse", "refs/heads/main") == self.head
        return elapsed

    def check_call(self) -> float:
        body = json.dumps(
            {
                "operation": "landing_check",
                "request": {
                    "version": 1,
                    "ref": "refs/heads/main",
                    "commit": self.head,
                    "revision": self.revision,
                },
            }
        ).encode()
        request = urllib.request.Request(
            self.url + "/v1/hub/workspace/repositories/r/profiles/default/agent-tasks",
            data=body,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request) as response:
            answer = json.loads(response.read())
        elapsed = (time.perf_counter() - started) * 1000
        assert answer["result"]["admitted"] is True, answer
        return elapsed

    def close(self) -> None:
        self.server.stop()
        self.service.close()


def python_pass() -> float:
    started = time.perf_counter()
    subprocess.run(["python3", "-c", "pass"], check=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--files", default="10,1000")
    args = parser.parse_args()
    print(
        "| files | push with hook | push without hook | hook adds | with / without "
        "| landing_check call alone | `python3 -c pass` |"
    )
    print("|---|---|---|---|---|---|---|")
    for files in [int(n) for n in args.files.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            world = World(Path(tmp), files)
            try:
                hooked, plain, calls, floor = [], [], [], []
                for _ in range(args.runs):
                    hooked.append(world.push(world.hooked))
                    plain.append(world.push(world.plain))
                    calls.append(world.check_call())
                    floor.append(python_pass())
                h, p = statistics.median(hooked), statistics.median(plain)
                print(
                    f"| {files} | {h:.0f} | {p:.0f} | {h - p:.0f} | {h / p:.1f}x "
                    f"| {statistics.median(calls):.1f} | {statistics.median(floor):.0f} |"
                )
            finally:
                world.close()
    print(f"\n(python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
