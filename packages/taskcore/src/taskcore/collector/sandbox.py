"""The collector's sandbox: how the pinned command is isolated, and the evidence that it was.

Three modes (:class:`~taskcore.contract.collector.SandboxMode`), strongest first:

* ``bwrap``: bubblewrap (Debian package ``bubblewrap``). The command sees a read-only view
  of the system directories (:data:`SYSTEM_PATHS`) and of the profile's ``read_only_paths``,
  the snapshot as the only writable tree (bound at its own path), a private size-bounded
  ``/tmp`` (tmpfs), a fresh ``/proc`` and a minimal ``/dev``; it gets new user, PID, IPC,
  UTS, cgroup and (unless the profile allows the network) network namespaces, and may not
  create further user namespaces. The collector's state directory (its key), the data dir,
  the user's home and every other repository are simply not there. When the command exits,
  bubblewrap's init (PID 1 of the namespace) exits and the kernel kills everything left.
* ``netns``: ``unshare --net --pid --fork --kill-child --map-root-user``: no network and a
  PID namespace, but the host's file system (kept for machines without bubblewrap).
* ``none``: no isolation at all; the runtime identity says so, and a profile whose
  ``minimum_sandbox`` is higher refuses before anything is claimed.

Limits: the wall time is the recipe's timeout; stdout plus stderr is capped by the profile's
``output_cap_bytes`` (the command is killed, outcome ``output_exceeded``). Memory and
processes are bounded by a cgroup v1 leaf made for the run where the collector may create
one (root with writable ``memory`` and ``pids`` hierarchies): the limit covers the whole
sandbox and reaching it is observed. Otherwise by ``setrlimit`` inside the sandbox through
``prlimit``: ``RLIMIT_AS`` per process, and ``RLIMIT_NPROC`` only where it counts the
sandbox alone (a user namespace of a non-root collector; the kernel does not apply it to
root). A limit the profile asks for and this machine cannot enforce is
``ISOLATION_UNAVAILABLE``, never silently dropped. cgroup v2 delegation is not used yet.

:func:`plan_isolation` decides (deterministically, for the runtime identity a profile pins)
and :func:`launch` runs: it builds the argv, makes and removes the cgroup leaf, kills what is
left and reports whether everything ended and which limits were reached.

>>> mode, iso = plan_isolation(None, mode=SandboxMode.NONE)
>>> mode.value, iso.network.value, iso.filesystem.value
('none', 'host', 'host')
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Final

from taskcore.canonical import canonical_value
from taskcore.codec import default_codec
from taskcore.contract.collector import (
    DEFAULT_ISOLATION,
    IsolationPolicy,
    NetworkAccess,
    SandboxMode,
)
from taskcore.contract.collector_records import (
    FilesystemView,
    Isolation,
    Limit,
    LimitMechanism,
    isolation_shortfall,
)
from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "BWRAP_FIXED_ARGS",
    "SYSTEM_PATHS",
    "UNSHARE_ARGS",
    "Launch",
    "bwrap_available",
    "cgroup_v1_available",
    "check_exposure",
    "check_visible",
    "detect_sandbox",
    "isolation_policy",
    "launch",
    "netns_available",
    "plan_isolation",
    "protected_paths",
]

SYSTEM_PATHS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Host directories a ``bwrap`` sandbox sees read-only (those that exist; symlinks as such)."""

BWRAP_FIXED_ARGS: Final = (
    "--die-with-parent",
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
)
"""The namespace options every ``bwrap`` run gets (``--share-net`` is added if allowed)."""

UNSHARE_ARGS: Final = ("--net", "--pid", "--fork", "--kill-child", "--map-root-user", "--")
"""The sandbox prefix after the ``unshare`` executable (mode ``netns``)."""

_NETWORK_HOST_PATHS: Final = ("/run/systemd/resolve",)
"""Also exposed read-only when the network is allowed (``resolv.conf`` often points there)."""

_CGROUP_ENTER: Final = (
    'while [ "$1" != -- ]; do echo 0 > "$1" || exit 126; shift; done; shift; exec "$@"'
)
"""``/bin/sh`` moves itself into each cgroup named before ``--``, then execs the rest."""

_KILL_GRACE_S: Final = 2.0
_UNAVAILABLE_HINT: Final = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and allow unprivileged "
    "user namespaces, or install a profile with a lower minimum_sandbox"
)


# -- what this machine offers ---------------------------------------------------------------


def _file_sha256(path: str) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


@cache
def _tool(name: str) -> str | None:
    found = shutil.which(name) or shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    return os.path.realpath(found) if found else None


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


@cache
def bwrap_available() -> bool:
    """Whether ``bwrap`` is installed and can build the sandbox here (tried once, for real)."""
    tool = _tool("bwrap")
    if tool is None:
        return False
    argv = [tool, *BWRAP_FIXED_ARGS, *_system_binds(), "--proc", "/proc", "--dev", "/dev"]
    return _works([*argv, "--", "/bin/true"])


@cache
def netns_available() -> bool:
    """Whether ``unshare`` can make a network and PID namespace here (tried once, for real)."""
    tool = _tool("unshare")
    return tool is not None and _works([tool, *UNSHARE_ARGS, "/bin/true"])


def _works(argv: list[str]) -> bool:
    try:
        done = subprocess.run(  # noqa: S603 - a fixed probe argv
            argv, capture_output=True, timeout=10, check=False, env={}
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def detect_sandbox() -> SandboxMode:
    """Return the strongest sandbox mode this machine offers."""
    if bwrap_available():
        return SandboxMode.BWRAP
    if netns_available():
        return SandboxMode.NETNS
    return SandboxMode.NONE


def _cgroup_v1_dirs() -> dict[str, Path] | None:
    """Return this process's cgroup v1 directories of the ``memory`` and ``pids`` controllers."""
    wanted = {"memory", "pids"}
    mounts: dict[str, tuple[str, str]] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            for line in fh:
                head, _, tail = line.partition(" - ")
                fields, rest = head.split(), tail.split()
                if len(fields) < 5 or len(rest) < 3 or rest[0] != "cgroup":
                    continue
                for controller in wanted & set(rest[2].split(",")):
                    mounts[controller] = (fields[3], fields[4])
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            paths = {}
            for line in fh:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3:
                    for controller in wanted & set(parts[1].split(",")):
                        paths[controller] = parts[2]
    except OSError:
        return None
    out = {}
    for controller in wanted:
        if controller not in mounts or controller not in paths:
            return None
        root, mountpoint = mounts[controller]
        path = paths[controller]
        if root != "/" and not (path == root or path.startswith(root + "/")):
            return None
        rel = path[len(root) :] if root != "/" else path
        out[controller] = Path(mountpoint + rel.rstrip("/"))
    return out


@cache
def cgroup_v1_available() -> bool:
    """Whether this process may make cgroup v1 ``memory`` and ``pids`` leaves (tried for real)."""
    if os.geteuid() != 0:
        return False
    dirs = _cgroup_v1_dirs()
    if dirs is None:
        return False
    name = f"agent-task-probe-{os.getpid()}-{secrets.token_hex(4)}"
    made: list[Path] = []
    try:
        for d in dirs.values():
            (d / name).mkdir()
            made.append(d / name)
        limits = (dirs["pids"] / name / "pids.max", dirs["memory"] / name / "memory.limit_in_bytes")
        return all(p.exists() for p in limits)
    except OSError:
        return False
    finally:
        for leaf in made:
            with contextlib.suppress(OSError):
                leaf.rmdir()


# -- deciding ---------------------------------------------------------------------------------


def isolation_policy(overrides: Mapping[str, object]) -> IsolationPolicy | None:
    """Return :data:`DEFAULT_ISOLATION` with ``overrides`` (wire names and JSON values).

    ``None`` and empty values count as not given; with nothing given the answer is ``None``
    (a profile without ``isolation``). Decoded strictly: a bad value is a typed error.

    >>> isolation_policy({"network": None}) is None
    True
    >>> isolation_policy({"minimum_sandbox": "bwrap", "process_limit": 256}).process_limit
    256
    """
    given = {k: v for k, v in overrides.items() if v is not None and v != () and v != []}
    if not given:
        return None
    tree = canonical_value(DEFAULT_ISOLATION)
    tree.update({k: list(v) if isinstance(v, tuple) else v for k, v in given.items()})
    policy: IsolationPolicy = default_codec().structure(tree, IsolationPolicy)
    return policy


def _unavailable(message: str) -> TaskError:
    return TaskError(ErrorCode.ISOLATION_UNAVAILABLE, message)


def _mode_available(mode: SandboxMode) -> bool:
    if mode is SandboxMode.BWRAP:
        return bwrap_available()
    if mode is SandboxMode.NETNS:
        return netns_available()
    return True


def _best_mode(policy: IsolationPolicy) -> SandboxMode:
    if bwrap_available():
        return SandboxMode.BWRAP
    if policy.network is NetworkAccess.NONE and netns_available():
        return SandboxMode.NETNS
    return SandboxMode.NONE


def _memory_mechanism() -> LimitMechanism:
    if cgroup_v1_available():
        return LimitMechanism.CGROUP_V1
    return LimitMechanism.RLIMIT if _tool("prlimit") else LimitMechanism.NONE


def _process_mechanism(mode: SandboxMode) -> LimitMechanism:
    if cgroup_v1_available():
        return LimitMechanism.CGROUP_V1
    # RLIMIT_NPROC counts a user's processes in the sandbox's own user namespace, and the
    # kernel never applies it to root; without a user namespace it would count the host's.
    if mode is not SandboxMode.NONE and os.geteuid() != 0 and _tool("prlimit"):
        return LimitMechanism.RLIMIT
    return LimitMechanism.NONE


def plan_isolation(
    required: IsolationPolicy | None, *, mode: SandboxMode | None = None
) -> tuple[SandboxMode, Isolation]:
    """Return the sandbox mode and :class:`Isolation` this machine gives a profile's policy.

    ``None`` (a profile without ``isolation``) means :data:`DEFAULT_ISOLATION` as best
    effort: the strongest sandbox here, no network where it can cut it off, nothing refused.
    Without ``mode`` the strongest available mode is used. The answer depends only on the
    policy and the machine, so it is what the runtime identity records and a profile pins.
    ``ISOLATION_UNAVAILABLE`` when the mode is not available here or the result falls short
    of the policy (a weaker sandbox than its minimum, a limit nothing here can enforce, an
    exposed path that does not exist).
    """
    policy = required if required is not None else DEFAULT_ISOLATION
    chosen = mode if mode is not None else _best_mode(policy)
    if not _mode_available(chosen):
        raise _unavailable(
            f"sandbox {chosen.value} does not work on this machine; {_UNAVAILABLE_HINT}"
        )
    if chosen.strength < policy.minimum_sandbox.strength:
        raise _unavailable(
            f"the profile requires sandbox {policy.minimum_sandbox.value} at least; this machine "
            f"offers {chosen.value}; {_UNAVAILABLE_HINT}"
        )
    bwrap = chosen is SandboxMode.BWRAP
    if bwrap:
        network = policy.network
    else:
        network = NetworkAccess.NONE if chosen is SandboxMode.NETNS else NetworkAccess.HOST
    tool = {SandboxMode.BWRAP: "bwrap", SandboxMode.NETNS: "unshare"}.get(chosen)
    tool_path = _tool(tool) if tool else None
    read_only = policy.read_only_paths if bwrap else ()
    for path in read_only:
        if not os.path.isdir(path) and not os.path.isfile(path):
            raise _unavailable(f"the profile exposes {path}, which does not exist on this machine")
    memory_how = _memory_mechanism() if policy.memory_limit_bytes else LimitMechanism.NONE
    process_how = _process_mechanism(chosen) if policy.process_limit else LimitMechanism.NONE
    isolation = Isolation(
        network=network,
        filesystem=FilesystemView.SNAPSHOT if bwrap else FilesystemView.HOST,
        pid_namespace=chosen is not SandboxMode.NONE,
        tool_sha256=_file_sha256(tool_path) if tool_path else None,
        read_only_paths=read_only,
        tmp_size_bytes=policy.tmp_size_bytes if bwrap else None,
        memory_limit_bytes=(
            policy.memory_limit_bytes if memory_how is not LimitMechanism.NONE else None
        ),
        memory_mechanism=memory_how,
        process_limit=policy.process_limit if process_how is not LimitMechanism.NONE else None,
        process_mechanism=process_how,
        output_cap_bytes=policy.output_cap_bytes,
    )
    shortfall = None if required is None else isolation_shortfall(chosen, isolation, required)
    if shortfall is not None:
        raise _unavailable(f"{shortfall} (sandbox {chosen.value} on this machine)")
    return chosen, isolation


def _visible_roots(isolation: Isolation) -> list[str]:
    roots = [os.path.realpath(p) for p in SYSTEM_PATHS if os.path.exists(p)]
    return roots + [os.path.realpath(p) for p in isolation.read_only_paths]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def check_visible(isolation: Isolation, path: str, *, what: str) -> None:
    """Refuse (``INVALID_VALUE``) a host file the command needs but the sandbox hides.

    Only a ``snapshot`` view hides anything; ``path`` is resolved through symlinks first.
    """
    if isolation.filesystem is not FilesystemView.SNAPSHOT:
        return
    real = os.path.realpath(path)
    if not any(_under(real, root) for root in _visible_roots(isolation)):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{what} resolves to {real}, which the sandbox does not expose; add its "
            "installation directory to the profile's read_only_paths",
        )


def protected_paths(
    *, state: Path, repository: Path | None = None, data_dir: Path | None = None
) -> dict[str, Path]:
    """The directories a command must never see, by name (for :func:`check_exposure`)."""
    out = {"collector's state directory": state}
    if repository is not None:
        out["repository"] = repository
    if data_dir is not None:
        out["data dir"] = data_dir
    home = os.environ.get("HOME")
    if home and os.path.isabs(home):
        out["home"] = Path(home)
    return out


def check_exposure(policy: IsolationPolicy, protected: Mapping[str, Path | str]) -> None:
    """Refuse (``INVALID_VALUE``) read-only paths that would expose a ``protected`` directory.

    ``protected`` names what must stay hidden (the collector's state directory, the data dir,
    the repository, the user's home): a read-only path may not contain one of them, and may
    not lie inside one of them, except inside the home (a toolchain under ``~/.pyenv``).
    """
    for index, path in enumerate(policy.read_only_paths):
        real = os.path.realpath(path)
        for name, hidden in protected.items():
            other = os.path.realpath(hidden)
            inside_ok = name == "home"
            if _under(other, real) or (_under(real, other) and not inside_ok):
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    f"read_only_paths[{index}] would expose the {name}; expose only the "
                    "toolchain the command needs",
                    path=f"$.isolation.read_only_paths[{index}]",
                )


# -- running ----------------------------------------------------------------------------------


class _CgroupLeaf:
    """A cgroup v1 ``memory`` + ``pids`` leaf made for one run."""

    def __init__(self, dirs: Mapping[str, Path], isolation: Isolation) -> None:
        name = f"agent-task-{os.getpid()}-{secrets.token_hex(6)}"
        self.memory = isolation.memory_mechanism is LimitMechanism.CGROUP_V1
        self.processes = isolation.process_mechanism is LimitMechanism.CGROUP_V1
        self.paths = {controller: d / name for controller, d in dirs.items()}
        made: list[Path] = []
        try:
            for path in self.paths.values():
                path.mkdir()
                made.append(path)
            if self.processes:
                (self.paths["pids"] / "pids.max").write_text(str(isolation.process_limit))
            if self.memory:
                limit = str(isolation.memory_limit_bytes)
                (self.paths["memory"] / "memory.limit_in_bytes").write_text(limit)
                # No swap beyond the limit, where swap is accounted at all.
                with contextlib.suppress(OSError):
                    (self.paths["memory"] / "memory.memsw.limit_in_bytes").write_text(limit)
        except OSError as exc:
            for path in made:
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise _unavailable(f"cannot set up the run's cgroup ({exc.strerror})") from None

    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.paths.values()]

    def members(self) -> set[int]:
        out: set[int] = set()
        for path in self.paths.values():
            with contextlib.suppress(OSError):
                out |= {int(x) for x in (path / "cgroup.procs").read_text().split()}
        return out

    def kill_all(self) -> None:
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def reached(self) -> set[Limit]:
        out: set[Limit] = set()
        if self.memory:
            with contextlib.suppress(OSError, ValueError):
                text = (self.paths["memory"] / "memory.oom_control").read_text()
                if _counter(text, "oom_kill") > 0:
                    out.add(Limit.MEMORY)
        if self.processes:
            with contextlib.suppress(OSError, ValueError):
                if _counter((self.paths["pids"] / "pids.events").read_text(), "max") > 0:
                    out.add(Limit.PROCESSES)
        return out

    def remove(self) -> bool:
        deadline = time.monotonic() + _KILL_GRACE_S
        while True:
            self.kill_all()
            left = [p for p in self.paths.values() if p.exists()]
            for path in left:
                with contextlib.suppress(OSError):
                    path.rmdir()
            if not any(p.exists() for p in self.paths.values()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def _counter(text: str, key: str) -> int:
    """The value of ``key`` in a cgroup ``key value`` file (0 if absent)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies have ended).

    A sandbox's init can outlive bubblewrap's monitor for a moment and then wait, a zombie,
    for the host's PID 1 to reap it; it still counts for ``killpg`` but runs nothing.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def _pid_gone(pid: int) -> bool:
    """Whether ``pid`` has exited.

    A zombie has: a PID namespace's init only becomes one after the kernel has ended every
    other process of its namespace.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


class Launch:
    """One run's argv and the handles to stop it and to prove it ended (see :func:`launch`)."""

    def __init__(self, argv: list[str], *, info: bool, cgroup: _CgroupLeaf | None) -> None:
        self.argv = argv
        self._cgroup = cgroup
        self._info = b""
        self._read_fd: int | None = None
        self._write_fd: int | None = None
        if info:
            self._read_fd, self._write_fd = os.pipe()
            os.set_blocking(self._read_fd, False)
            self.argv = [x if x != _INFO_FD else str(self._write_fd) for x in argv]
        self._pgid: int | None = None
        self._init_pid: int | None = None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """File descriptors the started process must inherit (bubblewrap's info pipe)."""
        return () if self._write_fd is None else (self._write_fd,)

    def started(self, pid: int | None) -> None:
        """Record the started process (the leader of its own session and process group).

        Call it with ``None`` if the process could not be started.
        """
        self._pgid = pid
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None

    def close(self) -> None:
        """Close the info pipe (:func:`launch` does on exit)."""
        for fd in (self._read_fd, self._write_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._read_fd = self._write_fd = None

    def _read_info(self) -> None:
        if self._read_fd is None or self._init_pid is not None:
            return
        with contextlib.suppress(OSError):
            while chunk := os.read(self._read_fd, 4096):
                self._info += chunk
        with contextlib.suppress(ValueError, KeyError, TypeError):
            self._init_pid = int(json.loads(self._info)["child-pid"])

    def kill(self) -> None:
        """Kill the process group, the sandbox's init (its whole PID namespace) and the cgroup."""
        self._read_info()
        if self._pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._pgid, signal.SIGKILL)
        if self._init_pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._init_pid, signal.SIGKILL)
        if self._cgroup is not None:
            self._cgroup.kill_all()

    def finish(self) -> tuple[bool, frozenset[Limit]]:
        """After the leader was reaped: end what is left; return (everything ended, limits).

        Everything ended when no member of the process group is left, the sandbox's init is
        gone (so its PID namespace is empty) and the cgroup leaf (if any) is empty and removed.
        """
        self._read_info()
        deadline = time.monotonic() + _KILL_GRACE_S
        while True:
            group = self._pgid is not None and _group_alive(self._pgid)
            init = self._init_pid is not None and not _pid_gone(self._init_pid)
            if not (group or init):
                break
            if time.monotonic() >= deadline:
                break
            self.kill()
            time.sleep(0.02)
        ended = not (group or init)
        reached: set[Limit] = set()
        if self._cgroup is not None:
            reached = self._cgroup.reached()
            ended = self._cgroup.remove() and ended
        return ended, frozenset(reached)


def _rlimit_prefix(isolation: Isolation) -> list[str]:
    opts = []
    if isolation.memory_mechanism is LimitMechanism.RLIMIT:
        opts.append(f"--as={isolation.memory_limit_bytes}")
    if isolation.process_mechanism is LimitMechanism.RLIMIT:
        opts.append(f"--nproc={isolation.process_limit}")
    prlimit = _tool("prlimit")
    if not opts:
        return []
    if prlimit is None:
        raise _unavailable("prlimit (util-linux) is not installed")
    return [prlimit, *opts, "--"]


_INFO_FD: Final = "<info-fd>"
"""Placeholder in a bwrap argv for the info pipe's write end (filled in by :class:`Launch`)."""


def _bwrap_argv(isolation: Isolation, root: str, cwd: str) -> list[str]:
    tool = _tool("bwrap")
    if tool is None:
        raise _unavailable(f"bwrap is not installed; {_UNAVAILABLE_HINT}")
    argv = [tool, *BWRAP_FIXED_ARGS]
    if isolation.network is NetworkAccess.HOST:
        argv.append("--share-net")
        argv += [x for p in _NETWORK_HOST_PATHS if os.path.isdir(p) for x in ("--ro-bind", p, p)]
    argv += _system_binds()
    argv += ["--size", str(isolation.tmp_size_bytes), "--tmpfs", "/tmp"]  # noqa: S108 - the sandbox's own
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for path in isolation.read_only_paths:
        argv += ["--ro-bind", path, path]
    argv += ["--bind", root, root, "--chdir", cwd, "--info-fd", _INFO_FD, "--"]
    return argv


@contextlib.contextmanager
def launch(
    mode: SandboxMode, isolation: Isolation, command: Sequence[str], *, root: str, cwd: str
) -> Iterator[Launch]:
    """Prepare one sandboxed run of ``command`` in the snapshot ``root`` (working dir ``cwd``).

    Yields a :class:`Launch`: start ``argv`` with ``pass_fds`` in a new session, call
    ``started``, ``kill`` on timeout or output overflow, ``finish`` after reaping. The cgroup
    leaf and the info pipe are cleaned up on exit.
    """
    cgroup = None
    if LimitMechanism.CGROUP_V1 in (isolation.memory_mechanism, isolation.process_mechanism):
        dirs = _cgroup_v1_dirs()
        if dirs is None:
            raise _unavailable("the cgroup v1 hierarchies went away")
        cgroup = _CgroupLeaf(dirs, isolation)
    run: Launch | None = None
    try:
        inner = [*_rlimit_prefix(isolation), *command]
        if mode is SandboxMode.BWRAP:
            argv = [*_bwrap_argv(isolation, root, cwd), *inner]
        elif mode is SandboxMode.NETNS:
            tool = _tool("unshare")
            if tool is None:
                raise _unavailable("unshare is not installed")
            argv = [tool, *UNSHARE_ARGS, *inner]
        else:
            argv = inner
        if cgroup is not None:
            argv = ["/bin/sh", "-c", _CGROUP_ENTER, "sh", *cgroup.procs_files(), "--", *argv]
        run = Launch(argv, info=mode is SandboxMode.BWRAP, cgroup=cgroup)
        yield run
    finally:
        if run is not None:
            run.close()
        if cgroup is not None:
            cgroup.remove()
