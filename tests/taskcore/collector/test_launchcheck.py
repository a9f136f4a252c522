"""The installation check starts the exact argv[0] in the collection's own sandbox.

The case a new user hit: a virtualenv's ``bin/python`` is a symlink into an interpreter
elsewhere. With only that interpreter's installation exposed, the host-side check saw a
visible file (the symlink's target) and the profile installed; the first collection then
failed inside bubblewrap (``execvp .../bin/python: No such file or directory``) and was
advised to fix the code. Here the check runs in the sandbox, so it fails at installation,
saying the profile is at fault; ``--expose-interpreter``'s paths make it pass; and a run
that bubblewrap could not exec is recorded as ``start_failed``, not as a failed test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from taskcore.collector.launchcheck import PROFILE_AT_FAULT, check_launch, interpreter_paths
from taskcore.collector.nextstep import advise
from taskcore.collector.runtime import run_recipe
from taskcore.contract.collector import (
    CommandRecipe,
    IsolationPolicy,
    NetworkAccess,
    check_argv0,
)
from taskcore.contract.collector_records import ExecutionOutcome, SandboxMode
from taskcore.errors import ErrorCode, TaskError

from .test_sandbox import needs_bwrap

pytestmark = pytest.mark.backend_only("sqlite", reason="no journal: this machine's sandbox only")

BASE = os.path.realpath(sys.base_prefix)
INTERPRETER = os.path.realpath(sys.executable)


def _policy(*paths: str) -> IsolationPolicy:
    return IsolationPolicy(
        minimum_sandbox=SandboxMode.BWRAP,
        network=NetworkAccess.NONE,
        memory_limit_bytes=None,
        process_limit=None,
        output_cap_bytes=16 * 1024 * 1024,
        tmp_size_bytes=8 * 1024 * 1024,
        read_only_paths=tuple(paths),
    )


def _recipe(*argv: str) -> CommandRecipe:
    return CommandRecipe(
        argv=argv,
        working_directory=".",
        environment_allowlist=("PATH",),
        timeout_ms=20_000,
        output_limit_bytes=4096,
    )


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A virtualenv as uv and ``python -m venv`` make one: ``bin/python`` links elsewhere."""
    root = tmp_path / "venv"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(INTERPRETER)
    (root / "pyvenv.cfg").write_text(f"home = {os.path.dirname(INTERPRETER)}\n")
    script = root / "bin" / "tool"
    script.write_text(f"#!{root / 'bin' / 'python'}\nprint('ran')\n")
    script.chmod(0o755)
    return root


@pytest.mark.parametrize("argv0", [".venv/bin/python", "./run.sh", "bin/pytest"])
def test_a_relative_argv0_is_refused(argv0):
    with pytest.raises(TaskError) as info:
        check_argv0(_recipe(argv0))
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.recipe.argv[0]")
    assert "relative path" in info.value.message
    check_argv0(_recipe("/bin/sh"))
    check_argv0(_recipe("python3"))  # a bare name is looked up on PATH, never relative


@needs_bwrap
def test_the_interpreters_directory_alone_is_refused_at_installation(venv):
    python = str(venv / "bin" / "python")
    if BASE.startswith(str(venv.parent)):
        pytest.skip("this interpreter lives in the test's own directory")
    # The base installation is shown, the virtualenv is not: the symlink's target is visible,
    # the path the collection execs is not.
    with pytest.raises(TaskError) as info:
        check_launch(_recipe(python, "-m", "pytest"), isolation=_policy(BASE))
    err = info.value
    assert (err.code, err.path) == (ErrorCode.INVALID_VALUE, "$.recipe.argv[0]")
    assert f"{python} does not exist in the sandbox" in err.message
    assert PROFILE_AT_FAULT in err.message
    assert err.details == {"executable": python}


@needs_bwrap
def test_a_visible_symlink_to_a_hidden_interpreter_is_named_as_such(venv):
    python = str(venv / "bin" / "python")
    if INTERPRETER.startswith(str(venv.parent)):
        pytest.skip("this interpreter lives in the test's own directory")
    with pytest.raises(TaskError) as info:
        check_launch(_recipe(python), isolation=_policy(str(venv)))
    assert f"{python} is a symlink whose target the sandbox does not show" in info.value.message


@needs_bwrap
def test_a_hidden_interpreter_of_a_script_is_named(venv, tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    tool = scripts / "tool"
    tool.write_text(f"#!{venv / 'bin' / 'python'}\nprint('ran')\n")
    tool.chmod(0o755)
    with pytest.raises(TaskError) as info:
        check_launch(_recipe(str(tool)), isolation=_policy(str(scripts), BASE))
    assert f"{venv / 'bin' / 'python'} (the #! interpreter of {tool})" in info.value.message


@needs_bwrap
def test_a_python_that_cannot_start_in_the_sandbox_is_refused(tmp_path):
    # What an interpreter without its standard library does: it execs, then dies at start-up.
    bindir = tmp_path / "py" / "bin"
    bindir.mkdir(parents=True)
    fake = bindir / "python3"
    fake.write_text(
        "#!/bin/sh\necho 'Fatal Python error: failed to get the Python codec' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(TaskError) as info:
        check_launch(_recipe(str(fake), "-m", "pytest"), isolation=_policy(str(tmp_path / "py")))
    assert f"{fake} cannot start in the sandbox: Fatal Python error" in info.value.message


@needs_bwrap
def test_expose_interpreter_shows_the_virtualenv_and_its_base_and_the_check_passes(venv):
    python = str(venv / "bin" / "python")
    paths = interpreter_paths(python, env={"PATH": "/usr/bin:/bin"})
    assert paths[0] == str(venv)
    assert all(os.path.isabs(p) for p in paths)
    assert check_launch(_recipe(python, "-c", "pass"), isolation=_policy(*paths)) == python
    # A script run by that interpreter: the same paths.
    assert interpreter_paths(str(venv / "bin" / "tool"), env={"PATH": "/usr/bin:/bin"}) == paths
    assert check_launch(_recipe(str(venv / "bin" / "tool")), isolation=_policy(*paths))


def test_expose_interpreter_refuses_what_is_no_python():
    with pytest.raises(TaskError) as info:
        interpreter_paths("/bin/sh", env={"PATH": "/usr/bin:/bin"})
    assert info.value.code is ErrorCode.INVALID_VALUE
    assert "is not a Python interpreter" in info.value.message


@needs_bwrap
def test_a_command_bwrap_cannot_exec_is_a_start_failure_not_a_failed_run(tmp_path):
    # The symlink's target (/bin/sh) is visible; the symlink is not: bwrap's execvp fails.
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "sh").symlink_to("/bin/sh")
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    result = run_recipe(
        _recipe(str(hidden / "sh"), "-c", "echo ran"),
        snapshot,
        env_source={"PATH": "/usr/bin:/bin"},
        isolation=_policy(),
    )
    assert result.outcome is ExecutionOutcome.START_FAILED
    assert (result.exit_status, result.signal) == (None, None)
    assert result.stderr.retained().startswith(b"bwrap: execvp ")
    # A command that runs and exits 1 with output on stderr is still a failed run.
    failed = run_recipe(
        _recipe("/bin/sh", "-c", "echo 'bwrap: execvp lookalike' >&2; exit 1"),
        snapshot,
        env_source={"PATH": "/usr/bin:/bin"},
        isolation=_policy(),
    )
    assert (failed.outcome, failed.exit_status) == (ExecutionOutcome.FAILED, 1)


def test_the_advice_for_a_run_that_could_not_start_blames_the_profile_not_the_code():
    failures = [("t-1", "collector_not_passed")]
    start = [{"task_id": "t-1", "outcome": "start_failed"}]
    profile = advise({"operation": "none"}, failures, change="c1", run_failures=start)
    assert (profile.kind, profile.command) == ("profile", None)
    assert "the collector profile, not the code, is at fault" in profile.sentence
    assert "--expose-interpreter" in profile.sentence
    failed = [{"task_id": "t-1", "outcome": "failed"}]
    fix = advise({"operation": "none"}, failures, change="c1", run_failures=failed)
    assert (fix.kind, fix.command) == ("fix", "agent-task checkpoint c1")
