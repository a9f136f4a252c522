"""Fixtures for collector tests: a real git repository, a collector state, descriptors."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from taskcore.authority.gitrev import git_revision
from taskcore.collector.runtime import probe_runtime
from taskcore.collector.state import CollectorState
from taskcore.contract.collector import CommandCollectorProfile, CommandRecipe, IsolationPolicy
from taskcore.contract.collector_descriptor import (
    CollectorDescriptor,
    PinnedBinding,
    build_execution_request,
    collector_profile_digest,
    request_bytes,
)
from taskcore.contract.collector_records import SandboxMode, runtime_identity_digest
from taskcore.contract.collector_transfer import OriginGrant
from taskcore.contract.common import ExecutorBinding
from taskcore.digest import sha256_hex

SH = "/bin/sh"


def git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, env=env)
    return done.stdout.decode().strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    (path / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (path / "run.sh").chmod(0o755)
    (path / "sub").mkdir()
    (path / "sub" / "data.txt").write_text("data\n")
    os.symlink("README.md", path / "link")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "one")
    return path


def commit_file(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"edit {name}")
    return head(repo)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def state(tmp_path: Path) -> CollectorState:
    st = CollectorState.open(tmp_path / "state" / "collector", create=True)
    st.generate_key()
    return st


def recipe(
    script: str, *, timeout_ms: int = 20_000, limit: int = 4096, allow: tuple[str, ...] = ("PATH",)
) -> CommandRecipe:
    return CommandRecipe(
        argv=(SH, "-c", script),
        working_directory=".",
        environment_allowlist=allow,
        timeout_ms=timeout_ms,
        output_limit_bytes=limit,
    )


DescriptorFactory = Callable[..., CollectorDescriptor]


@pytest.fixture
def make_descriptor(repo: Path, state: CollectorState) -> DescriptorFactory:
    def build(
        command: CommandRecipe | None = None,
        *,
        sandbox: SandboxMode | None = SandboxMode.NONE,
        isolation: IsolationPolicy | None = None,
        fence: int = 1,
        attempt_id: str = "att-1",
        commit: str | None = None,
        runtime_sha: str | None = None,
    ) -> CollectorDescriptor:
        key = state.load_key()
        rec = command or recipe("echo ok")
        identity = probe_runtime(rec, sandbox=sandbox, isolation=isolation)
        profile = CommandCollectorProfile(
            version=1,
            kind="command",
            profile_id="cp-1",
            repository_id="acme",
            workflow_profile_id="default",
            step_id="tests",
            registration_id="reg-1",
            registration_epoch=1,
            recipe=rec,
            runtime_identity_sha256=runtime_sha or runtime_identity_digest(identity),
            isolation=isolation,
        )
        the_commit = commit or head(repo)
        binding = PinnedBinding(
            audience="authority-1",
            repository_id="acme",
            workflow_profile_id="default",
            step_id="tests",
            task_id="task-1",
            task_digest="a" * 64,
            attempt_id=attempt_id,
            attempt_digest=sha256_hex(attempt_id.encode()),
            execution_operation_id="op-1",
            fence=fence,
            revision=git_revision(repo, the_commit),
            commit=the_commit,
        )
        request = build_execution_request(binding, profile)
        return CollectorDescriptor(
            version=1,
            kind="command",
            binding=binding,
            origin=OriginGrant(owner_id="w1", agent_id="tok1", grant_generation=1),
            registration=ExecutorBinding(
                registration_id="reg-1",
                executor_id="collector-1",
                registration_epoch=1,
                verification_key_id=key.key_id,
            ),
            profile=profile,
            profile_digest=collector_profile_digest(profile),
            request=request,
            request_sha256=sha256_hex(request_bytes(request)),
        )

    return build


# -- an authority in a data dir: repository, requirement, profile, enrollment -----------------


class Authority:
    """A data dir with ``repo`` registered as ``acme``, profile ``default`` and a test step."""

    def __init__(self, data_dir: Path, repo: Path, public_key: str) -> None:
        from taskcore.authority import (
            enroll_executor,
            install_requirement,
            register_profile,
            register_repository,
        )
        from taskcore.authority.operator import collector_test_requirement
        from taskcore.clock import FakeClock
        from taskcore.collector.state import key_id_for
        from taskcore.store import open_storage

        self.clock = FakeClock()
        self.storage = open_storage(data_dir, create=True)
        self.repo = repo
        register_repository(
            self.storage, self.clock, workspace="w1", repository_id="acme", work_tree=repo
        )
        installed = install_requirement(
            self.storage,
            self.clock,
            repository_id="acme",
            requirement=collector_test_requirement("tests", "the tests pass"),
        )
        self.requirement_digest = installed.requirement_digest
        register_profile(
            self.storage,
            self.clock,
            repository_id="acme",
            profile_id="default",
            target="main",
            requirement_digest=installed.requirement_digest,
        )
        self.enrollment = enroll_executor(
            self.storage,
            self.clock,
            registration_id="reg-1",
            executor_id="collector-1",
            repository_id="acme",
            step_id="tests",
            verification_key_id=key_id_for(public_key),
            public_key=public_key,
        )

    def profile(
        self,
        command: CommandRecipe | None = None,
        *,
        profile_id: str = "cp-1",
        epoch: int = 1,
        sandbox: SandboxMode | None = SandboxMode.NONE,
        step: str = "tests",
        isolation: IsolationPolicy | None = None,
    ) -> CommandCollectorProfile:
        rec = command or recipe("echo ok")
        identity = probe_runtime(rec, sandbox=sandbox, isolation=isolation)
        return CommandCollectorProfile(
            version=1,
            kind="command",
            profile_id=profile_id,
            repository_id="acme",
            workflow_profile_id="default",
            step_id=step,
            registration_id="reg-1",
            registration_epoch=epoch,
            recipe=rec,
            runtime_identity_sha256=runtime_identity_digest(identity),
            isolation=isolation,
        )


@pytest.fixture
def authority(tmp_path: Path, repo: Path, state: CollectorState):
    auth = Authority(tmp_path / "data", repo, state.load_key().public_key)
    yield auth
    auth.storage.close()


# -- a running authority reached through the WorkflowClient protocol --------------------------


class InProcessClient:
    """A :class:`taskcore.collector.client.WorkflowClient` over an in-process Service.

    It sends exactly what the HTTP client sends (the workflow envelope, the raw upload bytes)
    and answers the decoded success body; refusals are the Service's own TaskErrors.
    """

    def __init__(self, service, token: str) -> None:
        self.service = service
        self.token = token
        self.calls: list[str] = []

    def _route(self, repository: str, profile: str):
        from taskcore.service import Route

        return Route(repository=repository, profile=profile)

    def workflow(self, repository: str, profile: str, op: str, body: bytes):
        import json

        self.calls.append(op)
        envelope = json.dumps({"operation": op, "request": json.loads(body)}).encode()
        route = self._route(repository, profile)
        return self.service.call_workflow(self.token, envelope, route=route).json()

    def upload(self, repository: str, profile: str, data: bytes):
        self.calls.append("collector_upload")
        route = self._route(repository, profile)
        return self.service.call_workflow(
            self.token, data, route=route, operation="collector_upload"
        ).json()


class Live:
    """The ``authority`` with a collector profile installed, a Service and an agent token."""

    def __init__(
        self,
        authority: Authority,
        state: CollectorState,
        tmp_path: Path,
        command=None,
        isolation: IsolationPolicy | None = None,
    ):
        from taskcore.actors import Tier
        from taskcore.auth import issue_token
        from taskcore.collector.runtime import detect_sandbox
        from taskcore.evidence.profiles import install_collector_profile
        from taskcore.service import Service

        self.authority = authority
        self.state = state
        self.repo = authority.repo
        self.data_dir = tmp_path / "data"
        self.clock = authority.clock
        # collect_once runs in this machine's sandbox mode: pin the runtime it will observe.
        profile = authority.profile(command, sandbox=detect_sandbox(), isolation=isolation)
        install_collector_profile(authority.storage, self.clock, profile=profile)
        self.service = Service.open(self.data_dir, clock=self.clock)
        self.token = issue_token(
            self.service.storage, self.clock, workspace="w1", tier=Tier.AGENT
        ).token
        self.token_file = tmp_path / "agent.token"
        self.token_file.write_text(self.token + "\n")
        os.chmod(self.token_file, 0o600)
        self.client = InProcessClient(self.service, self.token)

    def checkpoint(self, change: str = "c1"):
        from taskcore.collector.client import checkpoint, clean_head

        return checkpoint(
            self.client,
            repository="acme",
            profile="default",
            change=change,
            commit=clean_head(self.repo),
        )

    def collect(self, change: str = "c1", **kwargs):
        from taskcore.collector.client import collect_once

        kwargs.setdefault("lease_ms", 600_000)
        kwargs.setdefault("data_dir", self.data_dir)
        kwargs.setdefault("state", self.state)
        return collect_once(
            self.client, repository="acme", profile="default", change=change, **kwargs
        )

    def close(self) -> None:
        self.service.close()


@pytest.fixture
def live(authority: Authority, state: CollectorState, tmp_path: Path):
    world = Live(authority, state, tmp_path)
    yield world
    world.close()


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend
