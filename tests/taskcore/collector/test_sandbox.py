"""The collector's sandbox, tried for real with a hostile test suite.

Every attack runs through :func:`run_recipe` (or the whole collection) in the ``bwrap``
sandbox of this machine and must fail inside it, while the run is recorded as it happened.
The network attack targets only a listener this test runs on 127.0.0.1 outside the sandbox.

On a machine where ``./dev`` installs bubblewrap (root with apt-get) these tests are never
skipped: a missing or broken ``bwrap`` fails them with ``ISOLATION_UNAVAILABLE``.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs
import pytest
from taskcore.codec import default_codec
from taskcore.collector import sandbox
from taskcore.collector.collect import collect_command
from taskcore.collector.runtime import probe_runtime, run_recipe
from taskcore.collector.sandbox import (
    bwrap_available,
    cgroup_v1_available,
    check_exposure,
    launch,
    plan_isolation,
    protected_paths,
)
from taskcore.collector.state import CollectorState
from taskcore.contract.collector import (
    DEFAULT_ISOLATION,
    CommandRecipe,
    IsolationPolicy,
    NetworkAccess,
)
from taskcore.contract.collector_records import (
    ExecutionOutcome,
    ExecutionRecord,
    FilesystemView,
    Limit,
    LimitMechanism,
    SandboxMode,
    check_execution_record,
    runtime_identity_digest,
)
from taskcore.contract.collector_transfer import decode_record, decode_transfer
from taskcore.errors import ErrorCode, TaskError

from .conftest import Live, commit_file, recipe

BWRAP_EXPECTED = sys.platform == "linux" and os.geteuid() == 0 and bool(shutil.which("apt-get"))
"""``./dev`` installs bubblewrap here, so its absence is a failure, not a skip."""
needs_bwrap = pytest.mark.skipif(
    not bwrap_available() and not BWRAP_EXPECTED,
    reason="bubblewrap is not installed (apt-get install bubblewrap; ./dev does it as root)",
)
CGROUP = cgroup_v1_available()

MiB = 1024 * 1024
POLICY = IsolationPolicy(
    minimum_sandbox=SandboxMode.BWRAP,
    network=NetworkAccess.NONE,
    memory_limit_bytes=256 * MiB,
    process_limit=64,
    output_cap_bytes=16 * MiB,
    tmp_size_bytes=8 * MiB,
    read_only_paths=(),
)
ENV = {"PATH": "/usr/bin:/bin"}


def run(snapshot: Path, script: str, policy: IsolationPolicy = POLICY, **kw):
    snapshot.mkdir(exist_ok=True)
    return run_recipe(
        recipe(script, **kw), snapshot, env_source=ENV, sandbox=SandboxMode.BWRAP, isolation=policy
    )


def text(capture) -> str:
    return capture.retained().decode("utf-8", "replace")


def leftover(marker: str) -> list[int]:
    """Host processes whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


# -- what the sandbox is ---------------------------------------------------------------------


@needs_bwrap
def test_the_identity_records_the_sandbox_and_its_settings():
    identity = probe_runtime(recipe("true"), env_source=ENV, isolation=POLICY)
    assert identity.sandbox is SandboxMode.BWRAP
    iso = identity.isolation
    assert iso.network is NetworkAccess.NONE
    assert iso.filesystem is FilesystemView.SNAPSHOT
    assert iso.pid_namespace
    assert iso.tool_sha256 is not None
    assert iso.tmp_size_bytes == 8 * MiB
    assert iso.output_cap_bytes == 16 * MiB
    assert (iso.memory_limit_bytes, iso.process_limit) == (256 * MiB, 64)
    assert iso.memory_mechanism is not LimitMechanism.NONE
    looser = attrs.evolve(POLICY, network=NetworkAccess.HOST)
    other = probe_runtime(recipe("true"), env_source=ENV, isolation=looser)
    assert other.isolation.network is NetworkAccess.HOST
    assert runtime_identity_digest(other) != runtime_identity_digest(identity)


@needs_bwrap
def test_the_snapshot_is_writable_and_the_system_is_read_only(tmp_path):
    result = run(
        tmp_path / "snap",
        "echo ok > inside.txt && echo a=$?; echo x > /usr/pwned; echo b=$?; echo x > /etc/pwned;"
        " echo c=$?",
    )
    out = text(result.stdout)
    assert "a=0" in out
    assert "b=0" not in out
    assert "c=0" not in out
    assert "Read-only file system" in text(result.stderr)
    assert (tmp_path / "snap" / "inside.txt").read_text() == "ok\n"
    assert not os.path.exists("/usr/pwned")
    assert not os.path.exists("/etc/pwned")


# -- the hostile suite, one attack at a time ---------------------------------------------------


@needs_bwrap
def test_the_collector_key_cannot_be_read(tmp_path):
    state = CollectorState.open(tmp_path / "state" / "collector", create=True)
    key = state.generate_key()
    seed_hex = key.seed
    script = f"cat {state.root}/key.json; echo rc=$?; ls {state.root}; ls {tmp_path}/state"
    result = run(tmp_path / "snap", script)
    out, err = text(result.stdout), text(result.stderr)
    assert "rc=1" in out
    assert seed_hex not in out
    assert seed_hex not in err
    assert "No such file or directory" in err
    assert result.outcome is ExecutionOutcome.FAILED


@needs_bwrap
def test_nothing_outside_the_snapshot_can_be_written(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    home = os.environ.get("HOME", "/root")
    script = (
        f"echo pwned > {outside}/x; echo a=$?; echo pwned > {home}/pwned; echo b=$?;"
        f" mkdir -p {tmp_path}/new; echo c=$?; ls {home}; echo d=$?"
    )
    result = run(tmp_path / "snap", script)
    out = text(result.stdout)
    for marker in ("a=0", "b=0", "d=0"):
        assert marker not in out
    assert not (outside / "x").exists()
    assert not Path(home, "pwned").exists()
    # mkdir inside the sandbox's own tmpfs /tmp may work; it never reaches the host.
    assert not (tmp_path / "new").exists()


@needs_bwrap
def test_a_loopback_listener_outside_cannot_be_reached(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        script = f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'; echo rc=$?"
        result = run(tmp_path / "snap", script)
        ready, _, _ = select.select([listener], [], [], 0.5)
    assert ready == [], "the listener outside the sandbox was connected to"
    assert "rc=1" in text(result.stdout)
    assert "Connection refused" in text(result.stderr)


@needs_bwrap
def test_a_profile_that_allows_the_network_reaches_the_same_listener(tmp_path):
    # The control for the test above: the listener is reachable when the profile says so.
    allowed = attrs.evolve(POLICY, network=NetworkAccess.HOST)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        script = f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3'; echo rc=$?"
        result = run(tmp_path / "snap", script, allowed)
        listener.settimeout(5)
        conn, _ = listener.accept()
        with conn:
            assert conn.recv(16) == b"hello\n"
    assert "rc=0" in text(result.stdout)


@needs_bwrap
def test_a_fork_bomb_is_bounded_and_leaves_nothing_behind(tmp_path):
    marker = "3917"
    script = f"i=0; while [ $i -lt 2000 ]; do sleep {marker} & i=$((i+1)); done; echo spawned $i"
    started = time.monotonic()
    result = run(tmp_path / "snap", script, timeout_ms=60_000)
    assert time.monotonic() - started < 30
    assert "spawned 2000" not in text(result.stdout)
    assert "fork" in text(result.stderr).lower()
    assert result.outcome is ExecutionOutcome.FAILED
    assert result.process_group_ended
    assert leftover(f"sleep\x00{marker}") == []
    if CGROUP:
        assert Limit.PROCESSES in result.limits_reached


@needs_bwrap
def test_printing_200_mib_is_cut_at_the_output_cap(tmp_path):
    started = time.monotonic()
    result = run(tmp_path / "snap", "head -c 209715200 /dev/zero; echo finished", limit=1024)
    assert result.outcome is ExecutionOutcome.OUTPUT_EXCEEDED
    assert (result.exit_status, result.signal) == (None, None)
    assert 16 * MiB < result.stdout.total_bytes < 200 * MiB
    assert result.stdout.truncated
    assert result.stdout.retained_bytes <= 1024
    assert Limit.OUTPUT in result.limits_reached
    assert b"finished" not in result.stdout.retained()
    assert result.process_group_ended
    assert time.monotonic() - started < 60


@needs_bwrap
def test_memory_beyond_the_limit_is_refused(tmp_path):
    script = (
        'awk \'BEGIN { s = "x"; while (length(s) < 600000000) s = s s; print "allocated" }\';'
        " echo rc=$?"
    )
    result = run(tmp_path / "snap", script)
    out = text(result.stdout)
    assert "allocated" not in out
    assert "rc=0" not in out
    assert result.process_group_ended
    if CGROUP:
        assert Limit.MEMORY in result.limits_reached


@needs_bwrap
def test_the_wall_time_is_bounded_and_every_process_ends(tmp_path):
    marker = "3918"
    result = run(tmp_path / "snap", f"sleep {marker} & setsid sleep {marker}", timeout_ms=500)
    assert result.outcome is ExecutionOutcome.TIMED_OUT
    assert Limit.TIME in result.limits_reached
    assert result.process_group_ended
    assert leftover(f"sleep\x00{marker}") == []


@needs_bwrap
def test_a_process_that_leaves_the_session_still_ends_with_the_sandbox(tmp_path):
    marker = "3919"
    result = run(tmp_path / "snap", f"setsid sleep {marker} & echo started")
    assert result.outcome is ExecutionOutcome.PASSED
    assert result.process_group_ended
    assert leftover(f"sleep\x00{marker}") == []


@needs_bwrap
def test_the_private_tmp_is_bounded(tmp_path):
    result = run(tmp_path / "snap", "head -c 16777216 /dev/zero > /tmp/big; echo rc=$?")
    assert "rc=0" not in text(result.stdout)
    assert "No space left on device" in text(result.stderr)


@needs_bwrap
def test_host_processes_are_invisible_and_no_new_user_namespace_can_be_made(tmp_path):
    script = f"kill -0 {os.getpid()}; echo kill=$?; unshare -U true; echo userns=$?; ls /proc"
    result = run(tmp_path / "snap", script)
    out = text(result.stdout)
    assert "kill=0" not in out
    assert "userns=0" not in out
    pids = [line for line in out.splitlines() if line.isdigit()]
    assert 0 < len(pids) < 10


# -- the whole collection with the hostile suite -----------------------------------------------

HOSTILE = """#!/bin/sh
# A hostile test suite: it tries everything, reports on stderr, then floods stdout.
cat {key} >&2 && echo "LEAK: read the key" >&2
echo pwned > {outside} && echo "LEAK: wrote outside" >&2
bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo "LEAK: connected out" >&2
i=0; while [ $i -lt 500 ]; do sleep 3920 & i=$((i+1)); done
echo "LEAK: forked 500" >&2
"""
FLOOD = """#!/bin/sh
# The rest of the suite: print 200 MiB (retrying while the bomb's processes are reaped).
for i in 1 2 3 4 5 6 7 8 9 10; do head -c 209715200 /dev/zero && break; done
"""


@needs_bwrap
def test_a_hostile_suite_fails_inside_and_is_recorded_honestly(
    repo, state, make_descriptor, tmp_path
):
    outside = repo / "pwned.txt"  # another repository's work tree, outside the snapshot
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        script = HOSTILE.format(key=state.root / "key.json", outside=outside, port=port)
        # The flood runs after the bomb's processes are killed (kill -1 is a builtin: no fork).
        commit_file(repo, "hostile.sh", script)
        commit_file(repo, "flood.sh", FLOOD)
        command = CommandRecipe(
            argv=("/bin/sh", "-c", "sh hostile.sh; kill -9 -1; exec sh flood.sh"),
            working_directory=".",
            environment_allowlist=("PATH",),
            timeout_ms=60_000,
            output_limit_bytes=8192,
        )
        descriptor = make_descriptor(command, sandbox=None, isolation=POLICY)
        result = collect_command(
            descriptor, state=state, repository=repo, env_source=ENV, sandbox=None
        )
        ready, _, _ = select.select([listener], [], [], 0.2)
    assert ready == []
    assert not outside.exists()
    assert leftover("sleep\x003920") == []
    decoded = decode_transfer(result.envelope)
    record = decode_record(ExecutionRecord, decoded.records[1])
    check_execution_record(record, descriptor.request, descriptor.request_sha256)
    assert record == result.record
    assert record.runtime.sandbox is SandboxMode.BWRAP
    assert record.outcome is ExecutionOutcome.OUTPUT_EXCEEDED
    assert Limit.OUTPUT in record.limits_reached
    if CGROUP:
        assert Limit.PROCESSES in record.limits_reached
    err = record.stderr.retained().decode("utf-8", "replace")
    assert "LEAK: read the key" not in err
    assert "LEAK: wrote outside" not in err
    assert "LEAK: connected out" not in err
    assert "LEAK: forked 500" in err or "fork" in err.lower()
    assert state.load_key().seed not in err
    assert record.cleanup.process_group_ended
    assert record.cleanup.snapshot_removed


@needs_bwrap
def test_through_the_authority_the_hostile_run_is_a_typed_failure(authority, state, tmp_path, repo):
    commit_file(repo, "hostile.sh", f"#!/bin/sh\ncat {state.root}/key.json\n")
    command = recipe("sh hostile.sh")
    world = Live(authority, state, tmp_path, command=command, isolation=POLICY)
    try:
        world.checkpoint()
        out = world.collect()
        assert out["collected"] is True
        assert out["record_outcome"] == "failed"
        assert out["upload"]["sandbox"] == "bwrap"
        codes = [f["code"] for f in out["qualification"]["failures"]]
        assert codes == ["collector_not_passed"]
        assert out["qualification"]["qualified"] is False
    finally:
        world.close()


# -- deciding: what is refused, before anything runs -------------------------------------------


def test_a_minimum_this_machine_cannot_give_is_refused(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_available", lambda: False)
    with pytest.raises(TaskError) as err:
        plan_isolation(POLICY)
    assert err.value.code is ErrorCode.ISOLATION_UNAVAILABLE
    assert "apt-get install bubblewrap" in err.value.message
    with pytest.raises(TaskError) as forced:
        plan_isolation(None, mode=SandboxMode.BWRAP)
    assert forced.value.code is ErrorCode.ISOLATION_UNAVAILABLE


def test_without_a_policy_the_strongest_sandbox_is_used_and_nothing_is_refused(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_available", lambda: False)
    monkeypatch.setattr(sandbox, "netns_available", lambda: False)
    mode, iso = plan_isolation(None)
    assert mode is SandboxMode.NONE
    assert iso.network is NetworkAccess.HOST
    with pytest.raises(TaskError) as err:
        plan_isolation(DEFAULT_ISOLATION)  # pinned explicitly, "no network" is a requirement
    assert err.value.code is ErrorCode.ISOLATION_UNAVAILABLE


def test_a_process_limit_root_cannot_enforce_is_refused(monkeypatch):
    monkeypatch.setattr(sandbox, "cgroup_v1_available", lambda: False)
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    policy = attrs.evolve(POLICY, minimum_sandbox=SandboxMode.NONE, network=NetworkAccess.HOST)
    with pytest.raises(TaskError) as err:
        plan_isolation(policy, mode=SandboxMode.NONE)
    assert err.value.code is ErrorCode.ISOLATION_UNAVAILABLE
    assert "process limit" in err.value.message
    _, iso = plan_isolation(attrs.evolve(policy, process_limit=None), mode=SandboxMode.NONE)
    assert iso.memory_mechanism is LimitMechanism.RLIMIT


@needs_bwrap
def test_a_non_root_collector_gets_rlimits(monkeypatch):
    monkeypatch.setattr(sandbox, "cgroup_v1_available", lambda: False)
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    mode, iso = plan_isolation(POLICY)
    assert mode is SandboxMode.BWRAP
    assert iso.memory_mechanism is LimitMechanism.RLIMIT
    assert iso.process_mechanism is LimitMechanism.RLIMIT


def _as_nobody_possible() -> bool:
    return os.geteuid() == 0 and shutil.which("setpriv") is not None and bwrap_available()


@pytest.mark.skipif(not _as_nobody_possible(), reason="needs root, setpriv and bubblewrap")
def test_rlimits_bound_a_non_root_collectors_sandbox(monkeypatch):
    # The collector here is root (cgroups); this runs the sandbox as 'nobody', the way an
    # ordinary user's collector runs it, to see the kernel enforce the rlimit fallback.
    monkeypatch.setattr(sandbox, "cgroup_v1_available", lambda: False)
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 65534)
    _, iso = plan_isolation(POLICY)
    snapshot = Path(tempfile.mkdtemp(prefix="agent-task-nobody-"))
    try:
        snapshot.chmod(0o777)
        script = (
            "i=0; while [ $i -lt 300 ]; do sleep 3921 & i=$((i+1)); done; echo spawned $i;"
            ' awk \'BEGIN { s = "x"; while (length(s) < 600000000) s = s s; print "big" }\''
        )
        command = ["/bin/sh", "-c", script]
        with launch(SandboxMode.BWRAP, iso, command, root=str(snapshot), cwd=str(snapshot)) as r:
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *r.argv]
            done = subprocess.run(
                argv, capture_output=True, timeout=60, pass_fds=r.pass_fds, check=False, env=ENV
            )
            r.started(None)
    finally:
        shutil.rmtree(snapshot)
    assert b"spawned 300" not in done.stdout
    assert b"fork" in done.stderr.lower()
    assert b"big" not in done.stdout
    assert leftover("sleep\x003921") == []


def test_read_only_paths_may_not_expose_protected_directories(tmp_path):
    state_dir = tmp_path / "home" / "u" / ".local" / "state" / "agent-task"
    home = tmp_path / "home" / "u"
    state_dir.mkdir(parents=True)
    (home / ".pyenv").mkdir()
    protected = {"collector's state directory": state_dir, "home": home}
    for bad in (str(tmp_path / "home"), str(home), str(state_dir / "snapshots")):
        policy = attrs.evolve(POLICY, read_only_paths=(bad,))
        with pytest.raises(TaskError) as err:
            check_exposure(policy, protected)
        assert err.value.code is ErrorCode.INVALID_VALUE
    check_exposure(attrs.evolve(POLICY, read_only_paths=(str(home / ".pyenv"),)), protected)
    assert set(protected_paths(state=state_dir, data_dir=tmp_path / "d")) >= {
        "collector's state directory",
        "data dir",
    }


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("relative", ErrorCode.INVALID_PATH),
        ("/", ErrorCode.OUT_OF_BOUNDS),  # the item's length rule (at least 2) comes first
        ("/a/../b", ErrorCode.INVALID_PATH),
        ("/a/", ErrorCode.INVALID_PATH),
        ("/x\ny", ErrorCode.INVALID_PATH),
    ],
)
def test_an_exposed_path_must_be_absolute_and_normalized(path, code):
    with pytest.raises(TaskError) as err:
        attrs.evolve(POLICY, read_only_paths=(path,))
    assert err.value.code is code
    # Decoding the same policy refuses it the same way.
    tree = default_codec().unstructure(POLICY)
    tree["read_only_paths"] = [path]
    with pytest.raises(TaskError) as decoded:
        default_codec().decode(type(POLICY), tree)
    assert (decoded.value.code, decoded.value.path) == (code, err.value.path)


@needs_bwrap
def test_an_executable_the_sandbox_hides_is_refused_until_it_is_exposed():
    python = CommandRecipe(
        argv=(sys.executable, "-c", "print('hi')"),
        working_directory=".",
        environment_allowlist=(),
        timeout_ms=10_000,
        output_limit_bytes=100,
    )
    real = os.path.realpath(sys.executable)
    if real.startswith(("/usr/", "/etc/")):
        pytest.skip("this interpreter lives in a system directory the sandbox always shows")
    with pytest.raises(TaskError) as err:
        probe_runtime(python, isolation=POLICY)
    assert err.value.code is ErrorCode.INVALID_VALUE
    assert "read_only_paths" in err.value.message
    exposed = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(real))}
    policy = attrs.evolve(POLICY, read_only_paths=tuple(sorted(exposed)))
    assert probe_runtime(python, isolation=policy).sandbox is SandboxMode.BWRAP


@needs_bwrap
def test_an_exposed_toolchain_runs_read_only(tmp_path):
    real = os.path.realpath(sys.executable)
    exposed = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(real))}
    policy = attrs.evolve(POLICY, read_only_paths=tuple(sorted(exposed)), memory_limit_bytes=None)
    python = CommandRecipe(
        argv=(sys.executable, "-c", f"open({sys.base_prefix!r} + '/pwned', 'w')"),
        working_directory=".",
        environment_allowlist=(),
        timeout_ms=20_000,
        output_limit_bytes=4096,
    )
    (tmp_path / "snap").mkdir()
    result = run_recipe(python, tmp_path / "snap", sandbox=SandboxMode.BWRAP, isolation=policy)
    assert result.outcome is ExecutionOutcome.FAILED
    assert b"Read-only file system" in result.stderr.retained()
    assert not os.path.exists(os.path.join(sys.base_prefix, "pwned"))


def test_collect_refuses_a_read_only_path_that_exposes_the_state(
    repo, state, make_descriptor, monkeypatch
):
    exposing = attrs.evolve(
        DEFAULT_ISOLATION, network=NetworkAccess.HOST, read_only_paths=(str(state.root.parent),)
    )
    descriptor = make_descriptor(recipe("true"), isolation=exposing)
    with pytest.raises(TaskError) as err:
        collect_command(descriptor, state=state, repository=repo, sandbox=SandboxMode.NONE)
    assert err.value.code is ErrorCode.INVALID_VALUE
    assert not any(state.root.joinpath("attempts").glob("*/reservation.json"))
