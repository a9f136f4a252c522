"""A whole collector set-up for CLI tests: repository, authority, key, profile, live service."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.authority.operator import collector_test_requirement
from taskcore.clock import SystemClock
from taskcore.collector.runtime import probe_runtime
from taskcore.collector.state import CollectorState, key_id_for
from taskcore.contract import CommandCollectorProfile, CommandRecipe
from taskcore.contract.collector_records import runtime_identity_digest
from taskcore.evidence.profiles import install_collector_profile
from taskcore.service import Service
from taskhttp.app import create_app
from taskhttp.server import BackgroundServer


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True,
        capture_output=True,
    )
    return done.stdout.decode().strip()


class World:
    """Everything ``agent-task collect`` and the Stop hooks need, with a live service."""

    def __init__(self, tmp: Path, script: str = "test -f calc.py") -> None:
        from taskcore.authority import (
            enroll_executor,
            install_requirement,
            register_profile,
            register_repository,
        )
        from taskcore.store import open_storage

        self.tmp = tmp
        self.repo = tmp / "repo"
        self.repo.mkdir()
        git(self.repo, "init", "-q", "-b", "main")
        (self.repo / "calc.py").write_text("x = 1\n")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "one")
        self.data = tmp / "data"
        self.state_dir = tmp / "collector"
        self.state = CollectorState.open(self.state_dir, create=True)
        key = self.state.generate_key()
        clock = SystemClock()
        storage = open_storage(self.data, create=True)
        register_repository(
            storage, clock, workspace="w1", repository_id="acme", work_tree=self.repo
        )
        req = install_requirement(
            storage,
            clock,
            repository_id="acme",
            requirement=collector_test_requirement("tests", "ok"),
        )
        register_profile(
            storage,
            clock,
            repository_id="acme",
            profile_id="default",
            target="main",
            requirement_digest=req.requirement_digest,
        )
        enroll_executor(
            storage,
            clock,
            registration_id="reg",
            executor_id="host",
            repository_id="acme",
            step_id="tests",
            verification_key_id=key_id_for(key.public_key),
            public_key=key.public_key,
        )
        recipe = CommandRecipe(
            argv=("/bin/sh", "-c", script),
            working_directory=".",
            environment_allowlist=("PATH",),
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
                repository_id="acme",
                workflow_profile_id="default",
                step_id="tests",
                registration_id="reg",
                registration_epoch=1,
                recipe=recipe,
                runtime_identity_sha256=runtime_identity_digest(probe_runtime(recipe)),
            ),
        )
        self.storage = storage
        self.service = Service.open(self.data)
        self.token = issue_token(self.service.storage, clock, workspace="w1", tier=Tier.AGENT).token
        self.token_file = tmp / "agent.token"
        self.token_file.write_text(self.token + "\n")
        os.chmod(self.token_file, 0o600)
        self.server = BackgroundServer(create_app(self.service))
        self.url = self.server.start()

    def env(self) -> dict[str, str]:
        return {
            "AGENT_TASK_URL": self.url,
            "AGENT_TASK_TOKEN_FILE": str(self.token_file),
            "AGENT_TASK_REPOSITORY": "acme",
            "AGENT_TASK_PROFILE": "default",
            "AGENT_TASK_COLLECTOR_DIR": str(self.state_dir),
            "AGENT_TASK_DATA_DIR": str(self.data),
        }

    def close(self) -> None:
        self.server.stop()
        self.service.close()
        self.storage.close()


def cli(*modules: str):
    """A click group with only the named taskcli command modules."""
    import importlib

    import click

    group = click.Group()
    for name in modules:
        importlib.import_module(f"taskcli.{name}").register(group)
    return group
