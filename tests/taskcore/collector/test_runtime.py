from __future__ import annotations

import os
import socket
import sys

import attrs
import pytest
from taskcore.collector.runtime import probe_runtime, run_recipe
from taskcore.collector.sandbox import netns_available
from taskcore.contract.collector import DEFAULT_ISOLATION, CommandRecipe, NetworkAccess
from taskcore.contract.collector_records import (
    ExecutionOutcome,
    SandboxMode,
    runtime_identity_digest,
)
from taskcore.errors import ErrorCode, TaskError

from .conftest import recipe

needs_netns = pytest.mark.skipif(
    not netns_available(), reason="this machine offers no unprivileged network namespace (unshare)"
)


def run(tmp_path, script, mode=SandboxMode.NONE, **kw):
    env = kw.pop("env", {"PATH": os.environ["PATH"]})
    return run_recipe(recipe(script, **kw), tmp_path, env_source=env, sandbox=mode)


def test_exit_zero_passes(tmp_path):
    result = run(tmp_path, "true")
    assert (result.outcome, result.exit_status) == (ExecutionOutcome.PASSED, 0)


def test_a_non_zero_exit_fails_with_its_status(tmp_path):
    result = run(tmp_path, "exit 7")
    assert (result.outcome, result.exit_status) == (ExecutionOutcome.FAILED, 7)


def test_only_allow_listed_environment_reaches_the_command(tmp_path):
    env = {"PATH": os.environ["PATH"], "KEEP": "yes", "SECRET": "no"}
    result = run(tmp_path, "env", env=env, allow=("PATH", "KEEP", "ABSENT"))
    lines = set(result.stdout.retained().decode().splitlines())
    assert "KEEP=yes" in lines
    assert not any(line.startswith("SECRET=") for line in lines)
    assert result.environment_names == ("KEEP", "PATH")


def test_a_timeout_kills_the_process_group(tmp_path):
    marker = tmp_path / "late"
    result = run(tmp_path, f"sleep 30 & sleep 30; touch {marker}", timeout_ms=300)
    assert result.outcome is ExecutionOutcome.TIMED_OUT
    assert result.exit_status is None
    assert result.duration_ms >= 300
    assert result.process_group_ended
    assert not marker.exists()


def test_background_children_do_not_outlive_the_run(tmp_path):
    result = run(tmp_path, "sleep 30 & echo started")
    assert result.outcome is ExecutionOutcome.PASSED
    assert result.process_group_ended


def test_output_keeps_the_tail_within_the_bound_and_hashes_everything(tmp_path):
    import hashlib

    result = run(tmp_path, "seq 1 2000", limit=100)
    full = "".join(f"{i}\n" for i in range(1, 2001)).encode()
    assert result.stdout.total_bytes == len(full)
    assert result.stdout.sha256 == hashlib.sha256(full).hexdigest()
    assert result.stdout.truncated
    assert result.stdout.retained() == full[-100:]


def test_stderr_keeps_its_share_of_the_bound(tmp_path):
    result = run(tmp_path, "seq 1 2000; seq 1 2000 >&2", limit=100)
    assert result.stdout.retained_bytes + result.stderr.retained_bytes == 100
    assert result.stderr.retained_bytes == 50


def test_a_missing_executable_is_a_start_failure(tmp_path):
    rec = CommandRecipe(
        argv=("no-such-tool-xyz",),
        working_directory=".",
        environment_allowlist=("PATH",),
        timeout_ms=1000,
        output_limit_bytes=100,
    )
    result = run_recipe(
        rec, tmp_path, env_source={"PATH": "/nonexistent"}, sandbox=SandboxMode.NONE
    )
    assert result.outcome is ExecutionOutcome.START_FAILED
    assert b"not on the collector's PATH" in result.stderr.retained()


def test_a_working_directory_outside_the_snapshot_is_refused(tmp_path):
    (tmp_path / "snap").mkdir()
    os.symlink("/", tmp_path / "snap" / "out")
    rec = CommandRecipe(
        argv=("/bin/true",),
        working_directory="out",
        environment_allowlist=(),
        timeout_ms=1000,
        output_limit_bytes=10,
    )
    with pytest.raises(TaskError) as err:
        run_recipe(rec, tmp_path / "snap", sandbox=SandboxMode.NONE)
    assert err.value.code is ErrorCode.INVALID_PATH


@needs_netns
def test_the_network_sandbox_cannot_reach_a_loopback_listener_outside(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        script = f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
        result = run(tmp_path, script, mode=SandboxMode.NETNS)
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert result.outcome is ExecutionOutcome.FAILED
    # unshare's namespace has loopback down: nothing is reachable at all.
    assert b"Network is unreachable" in result.stderr.retained()


@needs_netns
def test_the_network_sandbox_kills_everything_when_the_command_exits(tmp_path):
    result = run(tmp_path, "sleep 30 & echo bye", mode=SandboxMode.NETNS)
    assert result.outcome is ExecutionOutcome.PASSED
    assert result.process_group_ended


def test_the_runtime_identity_is_stable_and_names_the_sandbox(tmp_path):
    rec = recipe("true")
    first = probe_runtime(rec, sandbox=SandboxMode.NONE)
    assert first == probe_runtime(rec, sandbox=SandboxMode.NONE)
    assert first.sandbox is SandboxMode.NONE
    capped = attrs.evolve(DEFAULT_ISOLATION, output_cap_bytes=1024, network=NetworkAccess.HOST)
    other = probe_runtime(rec, sandbox=SandboxMode.NONE, isolation=capped)
    assert other.isolation.output_cap_bytes == 1024
    assert runtime_identity_digest(first) != runtime_identity_digest(other)


@needs_netns
def test_the_runtime_identity_differs_between_sandbox_modes():
    rec = recipe("true")
    none = probe_runtime(rec, sandbox=SandboxMode.NONE)
    netns = probe_runtime(rec, sandbox=SandboxMode.NETNS)
    assert netns.isolation.network.value == "none"
    assert runtime_identity_digest(none) != runtime_identity_digest(netns)


def test_the_runtime_identity_hashes_a_scripts_interpreter(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    rec = CommandRecipe(
        argv=(str(script),),
        working_directory=".",
        environment_allowlist=(),
        timeout_ms=1000,
        output_limit_bytes=10,
    )
    identity = probe_runtime(rec, sandbox=SandboxMode.NONE)
    assert identity.interpreter_sha256 is not None
    before = runtime_identity_digest(identity)
    script.write_text("#!/bin/sh\necho changed\n")
    assert runtime_identity_digest(probe_runtime(rec, sandbox=SandboxMode.NONE)) != before


def test_a_relative_executable_is_candidate_source_and_not_hashed():
    rec = CommandRecipe(
        argv=("./run.sh",),
        working_directory=".",
        environment_allowlist=(),
        timeout_ms=1000,
        output_limit_bytes=10,
    )
    identity = probe_runtime(rec, sandbox=SandboxMode.NONE)
    assert identity.executable_sha256 is None
    assert identity.executable == "./run.sh"
