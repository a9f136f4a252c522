"""The installation check: start what the collection will start, in the same sandbox, first.

A profile pins ``argv[0]``; a collection later execs exactly the path it resolves to on the
collector's machine (a bare name through the allow-listed ``PATH``), inside the sandbox its
isolation policy plans. Checking that path on the host is not enough: bubblewrap shows only
the system directories and the profile's ``read_only_paths``, so a virtualenv's
``bin/python`` (a symlink into an interpreter elsewhere) can resolve to a visible file while
the symlink itself is hidden (``bwrap: execvp .../.venv/bin/python: No such file or
directory`` at the first run). :func:`check_launch` therefore runs a probe *inside that same
sandbox* (:func:`~taskcore.collector.runtime.run_recipe`, the same plan, environment and
launch, an empty snapshot): the exact path must exist and be executable there, so must the
interpreter its ``#!`` line names, and a Python interpreter must start. A failure is
``INVALID_VALUE`` saying that the profile, not the code, is at fault and what to expose.

:func:`interpreter_paths` is ``--expose-interpreter``: the virtualenv of a Python
``argv[0]`` (or of the interpreter a script's ``#!`` names) and the installation it was
made from, as ``read_only_paths``. A relative ``argv[0]`` is refused
(:func:`taskcore.contract.collector.check_argv0`: it would name a file of the snapshot,
which holds only the committed tree).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Final

from taskcore.collector.runtime import resolve_executable, start_problem
from taskcore.collector.sandbox import SYSTEM_PATHS
from taskcore.contract.collector import CommandRecipe, IsolationPolicy, check_argv0
from taskcore.contract.collector_records import SandboxMode
from taskcore.errors import ErrorCode, TaskError

__all__ = ["PROFILE_AT_FAULT", "check_launch", "interpreter_paths"]

PROFILE_AT_FAULT: Final = (
    "the collector profile, not the code, is at fault: expose the interpreter "
    "(--expose-interpreter adds a virtualenv and its base interpreter read-only) or the "
    "directory that holds it (--read-only-path DIR), or pin an absolute argv[0] the sandbox "
    "shows, and install the profile again"
)
"""What to do when a profile's command cannot start in its sandbox (the advice's core)."""


def _reduced_env(recipe: CommandRecipe, source: Mapping[str, str]) -> dict[str, str]:
    return {name: source[name] for name in recipe.environment_allowlist if name in source}


def check_launch(
    recipe: CommandRecipe,
    *,
    isolation: IsolationPolicy | None,
    env_source: Mapping[str, str] | None = None,
    sandbox: SandboxMode | None = None,
) -> str:
    """Start the probe in the sandbox a collection of ``recipe`` gets; return the exec'd path.

    Refuses a relative ``argv[0]`` (:func:`check_argv0`), an ``argv[0]`` not found here
    (``NOT_FOUND``), a machine that cannot isolate as ``isolation`` requires
    (``ISOLATION_UNAVAILABLE``) and a command that could not start in that sandbox
    (``INVALID_VALUE``, naming what is missing and :data:`PROFILE_AT_FAULT`).
    """
    check_argv0(recipe)
    source = os.environ if env_source is None else env_source
    executable, _ = resolve_executable(recipe.argv[0], env=_reduced_env(recipe, source), cwd=None)
    problem = start_problem(
        executable, recipe, env_source=source, sandbox=sandbox, isolation=isolation
    )
    if problem is None:
        return executable
    raise TaskError(
        ErrorCode.INVALID_VALUE,
        f"the collection could not start argv[0] {recipe.argv[0][:200]!r} in its sandbox "
        f"({problem}); {PROFILE_AT_FAULT}",
        path="$.recipe.argv[0]",
        details={"executable": executable[:300]},
    )


def _shebang_interpreter(path: str, env: Mapping[str, str]) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        return shutil.which(words[1], path=env.get("PATH", os.defpath))
    return words[0]


def _system(path: str) -> bool:
    real = os.path.realpath(path)
    return any(
        real == root or real.startswith(root.rstrip("/") + "/")
        for root in (os.path.realpath(p) for p in SYSTEM_PATHS)
    )


def interpreter_paths(argv0: str, *, env: Mapping[str, str]) -> tuple[str, ...]:
    """``--expose-interpreter``: the read-only paths a Python ``argv[0]`` needs to start.

    ``argv[0]`` (resolved as a collection resolves it) is a Python interpreter or a script
    whose ``#!`` line names one. The interpreter itself says where it lives
    (``sys.prefix``: the virtualenv; ``sys.base_prefix``: the installation it was made
    from); both are returned unless the sandbox shows them anyway (system directories).
    ``INVALID_VALUE`` when ``argv[0]`` is no Python.
    """
    if "/" in argv0 and not argv0.startswith("/"):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"--expose-interpreter: argv[0] {argv0[:200]!r} is relative; pin an absolute path",
        )
    executable, _ = resolve_executable(argv0, env=env, cwd=None)
    python = executable
    if not os.path.basename(python).startswith("python"):
        python = _shebang_interpreter(executable, env) or ""
    if not os.path.basename(python).startswith("python"):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"--expose-interpreter: argv[0] {argv0[:200]!r} is not a Python interpreter or a "
            "script run by one; expose what it needs with --read-only-path DIR",
        )
    try:
        done = subprocess.run(  # noqa: S603 - the operator's own interpreter, no shell
            [python, "-c", "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix]))"],
            capture_output=True,
            env={"PATH": env.get("PATH", os.defpath)},
            timeout=30,
            check=True,
        )
        prefixes = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"--expose-interpreter: {python[:200]!r} did not say where it lives "
            f"({type(exc).__name__}); expose its directories with --read-only-path DIR",
        ) from None
    found: list[str] = []
    for prefix in prefixes:
        if isinstance(prefix, str) and os.path.isabs(prefix) and not _system(prefix):
            path = os.path.normpath(prefix)
            if path not in found:
                found.append(path)
    return tuple(found)
