"""The local process runtime: run one pinned :class:`CommandRecipe` on a snapshot.

* The environment is exactly the recipe's allow-list taken from the collector's environment
  (names not set are simply absent); nothing else is passed.
* ``argv[0]`` is resolved once (through the reduced ``PATH``, or relative to the working
  directory) and the resolved file is what runs and what is hashed into the runtime identity.
* The command runs in the strongest sandbox this machine offers, under the profile's
  :class:`~taskcore.contract.collector.IsolationPolicy` (:mod:`taskcore.collector.sandbox`:
  bubblewrap, else ``unshare --net --pid``, else none); the runtime identity records the
  mode and its settings, so a profile pinned with one refuses records made under another.
* stdout plus stderr beyond the policy's output cap kills the command (``output_exceeded``);
  memory and process limits are enforced where the machine can (see the sandbox module).
* The command runs in its own session; on timeout the whole process group is killed.
* Output is read concurrently from both pipes; every byte is counted and hashed, and only the
  tail within the recipe's bound is kept.

This trusts the local operator account: the executable checks have inherent time-of-check to
time-of-use limits, and it is not hostile-host attestation.

>>> identity = probe_runtime(CommandRecipe(argv=("/bin/sh", "-c", "true"),
...     working_directory=".", environment_allowlist=(), timeout_ms=1000,
...     output_limit_bytes=1024), sandbox=SandboxMode.NONE)
>>> identity.sandbox.value, identity.isolation.network.value, identity.executable_sha256 is not None
('none', 'host', True)
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Final

import attrs

from taskcore.collector.sandbox import (
    UNSHARE_ARGS,
    Launch,
    check_visible,
    detect_sandbox,
    launch,
    plan_isolation,
)
from taskcore.contract.collector import CommandRecipe, IsolationPolicy
from taskcore.contract.collector_records import (
    ExecutionOutcome,
    Limit,
    OutputCapture,
    RuntimeIdentity,
    SandboxMode,
    capture_output,
)
from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "UNSHARE_ARGS",
    "Progress",
    "RunResult",
    "detect_sandbox",
    "probe_runtime",
    "resolve_executable",
    "run_recipe",
    "start_problem",
]

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
    limits_reached: tuple[Limit, ...] = ()


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
    isolation: IsolationPolicy | None = None,
) -> RuntimeIdentity:
    """Return the runtime identity this machine gives ``recipe`` (what a profile pins).

    ``isolation`` is the profile's policy (``None``: the default, as best effort); ``sandbox``
    forces a mode instead of the strongest available one. ``ISOLATION_UNAVAILABLE`` if this
    machine cannot meet the policy; ``INVALID_VALUE`` if the sandbox would hide the
    executable or its interpreter.
    """
    env = _reduced_env(recipe, os.environ if env_source is None else env_source)
    mode, plan = plan_isolation(isolation, mode=sandbox)
    resolved, inside = resolve_executable(recipe.argv[0], env=env, cwd=None)
    if inside:
        executable, exe_digest, interp_digest = recipe.argv[0], None, None
    else:
        executable = os.path.realpath(resolved)
        check_visible(plan, resolved, what=f"argv[0] {recipe.argv[0]!r}")
        exe_digest = _file_sha256(executable)
        interpreter = _interpreter_of(executable, env)
        if interpreter:
            check_visible(plan, interpreter, what=f"the interpreter of {recipe.argv[0]!r}")
        interp_digest = _file_sha256(interpreter) if interpreter else None
    return RuntimeIdentity(
        version=1,
        system=platform.system() or "unknown",
        machine=platform.machine() or "unknown",
        sandbox=mode,
        isolation=plan,
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


class _Cap:
    """Watches stdout plus stderr against the output cap; the first pump past it kills."""

    def __init__(self, cap: int, tails: tuple[_Tail, _Tail], run: Launch) -> None:
        self.cap = cap
        self.tails = tails
        self.run = run
        self.exceeded = threading.Event()
        self._lock = threading.Lock()

    def check(self) -> None:
        if self.exceeded.is_set() or sum(t.total for t in self.tails) <= self.cap:
            return
        with self._lock:
            if not self.exceeded.is_set():
                self.exceeded.set()
                self.run.kill()


def _pump(stream: IO[bytes], sink: _Tail, cap: _Cap) -> None:
    while True:
        chunk = stream.read1(65536)  # type: ignore[attr-defined]
        if not chunk:
            break
        sink.feed(chunk)
        cap.check()
    stream.close()


def _split_bound(out: _Tail, err: _Tail, limit: int) -> tuple[bytes, bytes]:
    """Share ``limit`` between the two tails: stderr gets at most half unless stdout is short."""
    have_out, have_err = min(len(out.buf), out.total), min(len(err.buf), err.total)
    err_share = min(have_err, limit // 2)
    out_share = min(have_out, limit - err_share)
    err_share = min(have_err, limit - out_share)
    return out.tail(out_share), err.tail(err_share)


_START_PROBE_TIMEOUT_MS: Final = 30_000
_START_PROBE_OUTPUT: Final = 8192

# Runs inside the collection's sandbox with the exact path the collection will exec as $1.
# Exit 0: it can start; 3..7: why not (one line on stdout).
_START_PROBE: Final = r"""
p=$1
if [ -L "$p" ] && [ ! -e "$p" ]; then echo "$p is a symlink whose target the sandbox does not show"; exit 3; fi
if [ ! -e "$p" ]; then echo "$p does not exist in the sandbox"; exit 3; fi
if [ -d "$p" ] || [ ! -x "$p" ]; then echo "$p is not an executable file in the sandbox"; exit 4; fi
run=$p
line=
IFS= read -r line < "$p" || true
case "$line" in
'#!'*)
  set -f
  set -- ${line#??}
  set +f
  i=$1
  if [ ! -x "$i" ]; then echo "$i (the #! interpreter of $p) is not visible in the sandbox"; exit 5; fi
  run=$i
  if [ "${i##*/}" = env ] && [ -n "$2" ]; then
    run=
    IFS=:
    for d in ${PATH:-/usr/bin:/bin}; do
      if [ -x "$d/$2" ] && [ ! -d "$d/$2" ]; then run=$d/$2; break; fi
    done
    unset IFS
    if [ -z "$run" ]; then echo "$2 (named by the #! line of $p) is not on PATH in the sandbox"; exit 6; fi
  fi
  ;;
esac
py=
case "${p##*/}" in python*) py=$p ;; esac
if [ -z "$py" ]; then case "${run##*/}" in python*) py=$run ;; esac; fi
if [ -n "$py" ] && ! out=$("$py" -c 'import sys' 2>&1); then
  echo "$py cannot start in the sandbox: $(printf '%s' "$out" | tail -n 1)"; exit 7
fi
exit 0
"""


def start_problem(
    executable: str,
    recipe: CommandRecipe,
    *,
    env_source: Mapping[str, str] | None = None,
    sandbox: SandboxMode | None = None,
    isolation: IsolationPolicy | None = None,
) -> str | None:
    """Why ``executable`` cannot start in the sandbox a run of ``recipe`` gets; ``None`` if it can.

    A probe (``/bin/sh``, always visible) runs in that sandbox (the same plan, environment
    and launch, an empty snapshot) and checks the exact path: it must exist there and be
    executable, so must the interpreter its ``#!`` line names, and a Python interpreter must
    start (``-c 'import sys'``). None of the recipe's own code runs.
    """
    probe = CommandRecipe(
        argv=("/bin/sh", "-c", _START_PROBE, "probe", executable),
        working_directory=".",
        environment_allowlist=recipe.environment_allowlist,
        timeout_ms=_START_PROBE_TIMEOUT_MS,
        output_limit_bytes=_START_PROBE_OUTPUT,
    )
    with tempfile.TemporaryDirectory(prefix="agent-task-start-") as snapshot:
        result = _run(
            probe,
            Path(snapshot),
            env_source=env_source,
            sandbox=sandbox,
            isolation=isolation,
            progress=None,
            confirm=False,
        )
    if result.outcome is ExecutionOutcome.PASSED:
        return None
    said = (result.stdout.retained() or result.stderr.retained()).decode("utf-8", "replace")
    lines = said.strip().splitlines()
    return lines[-1][:300] if lines else f"the probe ended {result.outcome.value}"


def run_recipe(
    recipe: CommandRecipe,
    snapshot: Path,
    *,
    env_source: Mapping[str, str] | None = None,
    sandbox: SandboxMode | None = None,
    isolation: IsolationPolicy | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Run ``recipe`` in ``snapshot`` and return what was observed (never raises for the run).

    A command that fails, times out, passes the output cap or cannot start is an outcome, not
    an exception; only a working directory outside the snapshot (``INVALID_PATH``) and a
    machine that cannot isolate as ``isolation`` requires (``ISOLATION_UNAVAILABLE``) are
    refused, before anything runs. When bubblewrap says it could not exec the command (exit
    1, its ``execvp`` line the only output), :func:`start_problem` confirms it before the
    run is recorded ``start_failed`` (a command cannot pass its own failure off as one).
    """
    return _run(
        recipe,
        snapshot,
        env_source=env_source,
        sandbox=sandbox,
        isolation=isolation,
        progress=progress,
        confirm=True,
    )


def _run(
    recipe: CommandRecipe,
    snapshot: Path,
    *,
    env_source: Mapping[str, str] | None,
    sandbox: SandboxMode | None,
    isolation: IsolationPolicy | None,
    progress: Callable[[Progress], None] | None,
    confirm: bool,
) -> RunResult:
    mode, plan = plan_isolation(isolation, mode=sandbox)
    env = _reduced_env(recipe, os.environ if env_source is None else env_source)
    cwd = snapshot if recipe.working_directory == "." else snapshot / recipe.working_directory
    real_root, real_cwd = os.path.realpath(snapshot), os.path.realpath(cwd)
    if real_cwd != real_root and not real_cwd.startswith(real_root + os.sep):
        raise TaskError(ErrorCode.INVALID_PATH, "the working directory leaves the snapshot")
    out, err = _Tail(recipe.output_limit_bytes), _Tail(recipe.output_limit_bytes)
    started = time.monotonic()
    try:
        executable, inside = resolve_executable(recipe.argv[0], env=env, cwd=cwd)
        if not inside:
            check_visible(plan, executable, what=f"argv[0] {recipe.argv[0]!r}")
    except TaskError as exc:
        err.feed(exc.message.encode("utf-8"))
        return _finished(
            ExecutionOutcome.START_FAILED, None, None, started, out, err, recipe, env, ended=True
        )
    with launch(mode, plan, [executable, *recipe.argv[1:]], root=real_root, cwd=real_cwd) as run:
        try:
            proc = subprocess.Popen(  # noqa: S603 - the operator-pinned recipe, no shell
                run.argv,
                cwd=real_cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                pass_fds=run.pass_fds,
            )
        except OSError as exc:
            run.started(None)
            err.feed(f"cannot start {recipe.argv[0]!r}: {exc.strerror}".encode())
            return _finished(
                ExecutionOutcome.START_FAILED,
                None,
                None,
                started,
                out,
                err,
                recipe,
                env,
                ended=True,
            )
        run.started(proc.pid)
        assert proc.stdout is not None
        assert proc.stderr is not None
        cap = _Cap(plan.output_cap_bytes, (out, err), run)
        pumps = [
            threading.Thread(target=_pump, args=(proc.stdout, out, cap), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err, cap), daemon=True),
        ]
        for t in pumps:
            t.start()
        timed_out = _wait(proc, started + recipe.timeout_ms / 1000, started, out, err, progress)
        if timed_out:
            run.kill()
        returncode = proc.wait()  # reap the leader first: a zombie still counts as a member
        ended, reached = run.finish()
        for t in pumps:
            t.join(timeout=10)
    limits = set(reached)
    if out.total + err.total > plan.output_cap_bytes:
        outcome, exit_status, sig = ExecutionOutcome.OUTPUT_EXCEEDED, None, None
        limits.add(Limit.OUTPUT)
    elif timed_out:
        outcome, exit_status, sig = ExecutionOutcome.TIMED_OUT, None, None
        limits.add(Limit.TIME)
    elif returncode < 0:
        outcome, exit_status, sig = ExecutionOutcome.FAILED, None, -returncode
    elif (
        confirm
        and not inside  # a file of the snapshot: the command's own code, never confirmed
        and _exec_refused(mode, returncode, out, err)
        and start_problem(
            executable, recipe, env_source=env_source, sandbox=mode, isolation=isolation
        )
        is not None
    ):
        # bwrap could not exec the command inside the sandbox: it never started (the
        # profile's argv[0] or its interpreter is not visible there), not a failed run.
        outcome, exit_status, sig = ExecutionOutcome.START_FAILED, None, None
    else:
        # bwrap and unshare report a signalled child as 128 + signal, like a shell.
        outcome = ExecutionOutcome.PASSED if returncode == 0 else ExecutionOutcome.FAILED
        exit_status, sig = returncode, None
    return _finished(
        outcome,
        exit_status,
        sig,
        started,
        out,
        err,
        recipe,
        env,
        ended=ended,
        min_ms=recipe.timeout_ms if outcome is ExecutionOutcome.TIMED_OUT else 0,
        limits=limits,
    )


_BWRAP_EXEC_FAILED = b"bwrap: execvp "
"""How bubblewrap reports, as its only output, that it could not exec the command (exit 1)."""


def _exec_refused(mode: SandboxMode, returncode: int, out: _Tail, err: _Tail) -> bool:
    """Whether bwrap exited 1 because its ``execvp`` of the command failed (nothing ran)."""
    if mode is not SandboxMode.BWRAP or returncode != 1 or out.total:
        return False
    text = err.tail(min(err.total, 4096))
    return text.startswith(_BWRAP_EXEC_FAILED) and text.rstrip(b"\n").count(b"\n") == 0


def _wait(
    proc: subprocess.Popen[bytes],
    deadline: float,
    started: float,
    out: _Tail,
    err: _Tail,
    progress: Callable[[Progress], None] | None,
) -> bool:
    """Wait for ``proc`` until ``deadline``, reporting progress; return whether it timed out."""
    next_tick = started + _PROGRESS_EVERY_S
    while True:
        now = time.monotonic()
        try:
            proc.wait(timeout=max(min(deadline, next_tick) - now, 0.001))
            return False
        except subprocess.TimeoutExpired:
            pass  # still running: check the deadline and report progress below
        now = time.monotonic()
        if now >= deadline:
            return True
        if now >= next_tick:
            next_tick = now + _PROGRESS_EVERY_S
            if progress is not None:
                progress(Progress(int((now - started) * 1000), out.total + err.total))


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
    limits: set[Limit] | None = None,
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
        limits_reached=tuple(sorted(limits or (), key=lambda limit: limit.value)),
    )
