"""The local process runtime: run one pinned :class:`CommandRecipe` on a snapshot.

* The environment is exactly the recipe's allow-list taken from the collector's environment
  (names not set are simply absent); nothing else is passed.
* ``argv[0]`` is resolved once (through the reduced ``PATH``, or relative to the working
  directory) and the resolved file is what runs and what is hashed into the runtime identity.
* Where the machine allows unprivileged namespaces, the command runs under
  ``unshare --net --pid --fork --kill-child --map-root-user``: a network namespace with no
  interface but a down loopback, and a PID namespace whose every process the kernel kills when
  the command's init exits. Otherwise it runs with the host's network (sandbox ``none``) and
  the identity says so, so a profile pinned with ``netns`` refuses such records.
* The command runs in its own session; on timeout the whole process group is killed.
* Output is read concurrently from both pipes; every byte is counted and hashed, and only the
  tail within the recipe's bound is kept.

This trusts the local operator account: the executable checks have inherent time-of-check to
time-of-use limits, and it is not hostile-host attestation.

>>> identity = probe_runtime(CommandRecipe(argv=("/bin/sh", "-c", "true"),
...     working_directory=".", environment_allowlist=(), timeout_ms=1000,
...     output_limit_bytes=1024), sandbox=SandboxMode.NONE)
>>> identity.sandbox.value, identity.executable_sha256 is not None
('none', True)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import IO, Final

import attrs

from taskcore.collector.records import (
    ExecutionOutcome,
    OutputCapture,
    RuntimeIdentity,
    SandboxMode,
    capture_output,
)
from taskcore.contract.collector import CommandRecipe
from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "UNSHARE_ARGS",
    "Progress",
    "RunResult",
    "detect_sandbox",
    "probe_runtime",
    "resolve_executable",
    "run_recipe",
]

UNSHARE_ARGS: Final = ("--net", "--pid", "--fork", "--kill-child", "--map-root-user", "--")
"""The sandbox prefix after the ``unshare`` executable."""

_KILL_GRACE_S: Final = 2.0
_PROGRESS_EVERY_S: Final = 1.0
_COLLECTOR_VERSION: Final = "taskcore-0.1.0"


@attrs.frozen
class Progress:
    """A progress tick while the command runs."""

    elapsed_ms: int
    output_bytes: int


@attrs.frozen(kw_only=True)
class RunResult:
    """What one run observed (the runtime part of an ExecutionRecord)."""

    outcome: ExecutionOutcome
    exit_status: int | None
    signal: int | None
    duration_ms: int
    stdout: OutputCapture
    stderr: OutputCapture
    environment_names: tuple[str, ...]
    process_group_ended: bool


@cache
def _unshare_path() -> str | None:
    return shutil.which("unshare")


@cache
def detect_sandbox() -> SandboxMode:
    """Return ``netns`` if an unprivileged network+PID namespace works here, else ``none``."""
    unshare = _unshare_path()
    if unshare is None:
        return SandboxMode.NONE
    try:
        proc = subprocess.run(  # noqa: S603 - fixed argv
            [unshare, *UNSHARE_ARGS, "/bin/true"],
            capture_output=True,
            timeout=10,
            check=False,
            env={},
        )
    except (OSError, subprocess.TimeoutExpired):
        return SandboxMode.NONE
    return SandboxMode.NETNS if proc.returncode == 0 else SandboxMode.NONE


def _reduced_env(recipe: CommandRecipe, source: Mapping[str, str]) -> dict[str, str]:
    return {name: source[name] for name in recipe.environment_allowlist if name in source}


def resolve_executable(argv0: str, *, env: Mapping[str, str], cwd: Path | None) -> tuple[str, bool]:
    """Return ``(path, inside_snapshot)`` of the file ``argv0`` names.

    A bare name is searched on the reduced ``PATH`` (``os.defpath`` if ``PATH`` is not
    allow-listed); a relative path is candidate source inside the snapshot.
    """
    if "/" not in argv0:
        found = shutil.which(argv0, path=env.get("PATH", os.defpath))
        if found is None:
            raise TaskError(
                ErrorCode.NOT_FOUND,
                f"{argv0!r} is not on the collector's PATH; pin an absolute argv[0] or "
                "allow-list PATH",
            )
        return os.path.abspath(found), False
    if os.path.isabs(argv0):
        return argv0, False
    if cwd is None:
        return argv0, True
    return str(cwd / argv0), True


def _file_sha256(path: str) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def _interpreter_of(path: str, env: Mapping[str, str]) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip().split()
    if not line:
        return None
    interpreter = line[0]
    if os.path.basename(interpreter) == "env" and len(line) > 1:
        found = shutil.which(line[1], path=env.get("PATH", os.defpath))
        return os.path.realpath(found) if found else None
    return os.path.realpath(interpreter)


def probe_runtime(
    recipe: CommandRecipe,
    *,
    env_source: Mapping[str, str] | None = None,
    sandbox: SandboxMode | None = None,
) -> RuntimeIdentity:
    """Return the runtime identity this machine gives ``recipe`` (what a profile pins)."""
    env = _reduced_env(recipe, os.environ if env_source is None else env_source)
    resolved, inside = resolve_executable(recipe.argv[0], env=env, cwd=None)
    if inside:
        executable, exe_digest, interp_digest = recipe.argv[0], None, None
    else:
        executable = os.path.realpath(resolved)
        exe_digest = _file_sha256(executable)
        interpreter = _interpreter_of(executable, env)
        interp_digest = _file_sha256(interpreter) if interpreter else None
    return RuntimeIdentity(
        version=1,
        system=platform.system() or "unknown",
        machine=platform.machine() or "unknown",
        sandbox=sandbox if sandbox is not None else detect_sandbox(),
        executable=executable,
        executable_sha256=exe_digest,
        interpreter_sha256=interp_digest,
        collector_version=_COLLECTOR_VERSION,
    )


class _Tail:
    """Counts and hashes a stream, keeping only its last ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self.hash = hashlib.sha256()
        self.buf = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.hash.update(chunk)
        self.buf += chunk
        if len(self.buf) > 2 * self.limit + 65536:
            del self.buf[: len(self.buf) - self.limit]

    def tail(self, n: int) -> bytes:
        return bytes(self.buf[len(self.buf) - n :]) if n else b""


def _pump(stream: IO[bytes], sink: _Tail) -> None:
    while True:
        chunk = stream.read1(65536)  # type: ignore[attr-defined]
        if not chunk:
            break
        sink.feed(chunk)
    stream.close()


def _split_bound(out: _Tail, err: _Tail, limit: int) -> tuple[bytes, bytes]:
    """Share ``limit`` between the two tails: stderr gets at most half unless stdout is short."""
    have_out, have_err = min(len(out.buf), out.total), min(len(err.buf), err.total)
    err_share = min(have_err, limit // 2)
    out_share = min(have_out, limit - err_share)
    err_share = min(have_err, limit - out_share)
    return out.tail(out_share), err.tail(err_share)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _end_group(pgid: int) -> bool:
    """Kill what is left of the process group; return whether it is gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + _KILL_GRACE_S
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                return True
            time.sleep(0.02)
    return not _group_alive(pgid)


def run_recipe(
    recipe: CommandRecipe,
    snapshot: Path,
    *,
    env_source: Mapping[str, str] | None = None,
    sandbox: SandboxMode | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Run ``recipe`` in ``snapshot`` and return what was observed (never raises for the run).

    A command that fails, times out or cannot start is an outcome, not an exception; only a
    working directory outside the snapshot is refused (``INVALID_PATH``).
    """
    mode = sandbox if sandbox is not None else detect_sandbox()
    env = _reduced_env(recipe, os.environ if env_source is None else env_source)
    cwd = snapshot if recipe.working_directory == "." else snapshot / recipe.working_directory
    real_root, real_cwd = os.path.realpath(snapshot), os.path.realpath(cwd)
    if real_cwd != real_root and not real_cwd.startswith(real_root + os.sep):
        raise TaskError(ErrorCode.INVALID_PATH, "the working directory leaves the snapshot")
    out, err = _Tail(recipe.output_limit_bytes), _Tail(recipe.output_limit_bytes)
    started = time.monotonic()
    try:
        executable, _ = resolve_executable(recipe.argv[0], env=env, cwd=cwd)
    except TaskError as exc:
        err.feed(exc.message.encode("utf-8"))
        return _finished(
            ExecutionOutcome.START_FAILED, None, None, started, out, err, recipe, env, ended=True
        )
    argv = [executable, *recipe.argv[1:]]
    unshare = _unshare_path()
    if mode is SandboxMode.NETNS and unshare is not None:
        argv = [unshare, *UNSHARE_ARGS, *argv]
    try:
        proc = subprocess.Popen(  # noqa: S603 - the operator-pinned recipe, no shell
            argv,
            cwd=real_cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        err.feed(f"cannot start {recipe.argv[0]!r}: {exc.strerror}".encode())
        return _finished(
            ExecutionOutcome.START_FAILED, None, None, started, out, err, recipe, env, ended=True
        )
    assert proc.stdout is not None
    assert proc.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
    ]
    for t in pumps:
        t.start()
    deadline = started + recipe.timeout_ms / 1000
    timed_out = False
    next_tick = started + _PROGRESS_EVERY_S
    while True:
        now = time.monotonic()
        wait_for = min(deadline, next_tick) - now
        try:
            proc.wait(timeout=max(wait_for, 0.001))
            break
        except subprocess.TimeoutExpired:
            pass  # still running: check the deadline and report progress below
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        if now >= next_tick:
            next_tick = now + _PROGRESS_EVERY_S
            if progress is not None:
                progress(Progress(int((now - started) * 1000), out.total + err.total))
    pgid = proc.pid
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    returncode = proc.wait()  # reap the leader first: a zombie still counts as a member
    ended = _end_group(pgid) if _group_alive(pgid) else True
    for t in pumps:
        t.join(timeout=10)
    if timed_out:
        return _finished(
            ExecutionOutcome.TIMED_OUT,
            None,
            None,
            started,
            out,
            err,
            recipe,
            env,
            ended=ended,
            min_ms=recipe.timeout_ms,
        )
    if returncode < 0:
        return _finished(
            ExecutionOutcome.FAILED, None, -returncode, started, out, err, recipe, env, ended=ended
        )
    # unshare reports a signalled child as 128 + signal, like a shell.
    outcome = ExecutionOutcome.PASSED if returncode == 0 else ExecutionOutcome.FAILED
    return _finished(outcome, returncode, None, started, out, err, recipe, env, ended=ended)


def _finished(
    outcome: ExecutionOutcome,
    exit_status: int | None,
    sig: int | None,
    started: float,
    out: _Tail,
    err: _Tail,
    recipe: CommandRecipe,
    env: Mapping[str, str],
    *,
    ended: bool,
    min_ms: int = 0,
) -> RunResult:
    duration = max(int((time.monotonic() - started) * 1000), min_ms)
    out_tail, err_tail = _split_bound(out, err, recipe.output_limit_bytes)
    return RunResult(
        outcome=outcome,
        exit_status=exit_status,
        signal=sig,
        duration_ms=duration,
        stdout=capture_output(out_tail, total_bytes=out.total, full_sha256=out.hash.hexdigest()),
        stderr=capture_output(err_tail, total_bytes=err.total, full_sha256=err.hash.hexdigest()),
        environment_names=tuple(sorted(env)),
        process_group_ended=ended,
    )
