"""Installing and removing the landing hook: only what agent-task wrote, nothing else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.landing_install import (
    HookSettings,
    hook_path,
    install_hook,
    render_hook,
    settings_of,
    uninstall_hook,
)


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    path = tmp_path / "b.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "hook.token"
    path.write_text("atk_x.y\n")
    return path


def settings(token: Path, **changes) -> HookSettings:
    values = {
        "url": "http://127.0.0.1:8787",
        "repository": "acme",
        "profile": "default",
        "protect": ("refs/heads/main",),
        "token_file": str(token),
        "timeout": 10,
        "fail_open": False,
    }
    values.update(changes)
    return HookSettings(**values)


def code_of(fn, *args, **kwargs) -> ErrorCode:
    with pytest.raises(TaskError) as err:
        fn(*args, **kwargs)
    return err.value.code


def test_install_writes_an_executable_hook_with_the_settings(bare, token_file):
    outcome = install_hook(bare, settings(token_file))
    assert outcome.path == bare / "hooks" / "pre-receive"
    assert outcome.replaced is False
    assert os.access(outcome.path, os.X_OK)
    text = outcome.path.read_text()
    assert settings_of(text) == settings(token_file)
    assert "atk_x" not in text  # the token stays in its file


def test_reinstalling_replaces_our_own_hook_with_new_settings(bare, token_file):
    install_hook(bare, settings(token_file))
    outcome = install_hook(bare, settings(token_file, timeout=30, fail_open=True))
    assert outcome.replaced is True
    assert settings_of(outcome.path.read_text()).timeout == 30


def test_install_refuses_to_replace_a_hook_it_did_not_write(bare, token_file):
    foreign = bare / "hooks" / "pre-receive"
    foreign.write_text("#!/bin/sh\nexit 0\n")
    assert code_of(install_hook, bare, settings(token_file)) is ErrorCode.CONFLICT
    assert foreign.read_text() == "#!/bin/sh\nexit 0\n"


def test_uninstall_removes_only_what_install_wrote(bare, token_file):
    install_hook(bare, settings(token_file))
    samples = sorted(p.name for p in (bare / "hooks").iterdir() if p.name != "pre-receive")
    assert uninstall_hook(bare) == bare / "hooks" / "pre-receive"
    assert sorted(p.name for p in (bare / "hooks").iterdir()) == samples
    assert code_of(uninstall_hook, bare) is ErrorCode.NOT_FOUND


def test_uninstall_leaves_a_foreign_hook_alone(bare):
    foreign = bare / "hooks" / "pre-receive"
    foreign.write_text("#!/bin/sh\nexit 0\n")
    assert code_of(uninstall_hook, bare) is ErrorCode.CONFLICT
    assert foreign.exists()


def test_uninstall_leaves_a_hook_changed_after_install_alone(bare, token_file):
    path = install_hook(bare, settings(token_file)).path
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(5, "import os; os.system('true')\n")
    path.write_text("".join(lines))
    assert code_of(uninstall_hook, bare) is ErrorCode.CONFLICT
    assert path.exists()


def test_core_hooks_path_is_honoured(bare, token_file, tmp_path):
    hooks = tmp_path / "shared-hooks"
    subprocess.run(["git", "-C", str(bare), "config", "core.hooksPath", str(hooks)], check=True)
    assert hook_path(bare) == hooks / "pre-receive"
    assert install_hook(bare, settings(token_file)).path == hooks / "pre-receive"
    assert not (bare / "hooks" / "pre-receive").exists()


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"url": "ftp://x"}, ErrorCode.INVALID_VALUE),
        ({"url": "http://a b"}, ErrorCode.INVALID_VALUE),
        ({"repository": "../etc"}, ErrorCode.INVALID_VALUE),
        ({"protect": ()}, ErrorCode.INVALID_VALUE),
        ({"protect": ("main",)}, ErrorCode.INVALID_VALUE),
        ({"protect": ("refs/heads/../x",)}, ErrorCode.INVALID_VALUE),
        ({"token_file": "relative.token"}, ErrorCode.INVALID_PATH),
        ({"token_file": "/nonexistent/hook.token"}, ErrorCode.INVALID_PATH),
        ({"timeout": 0}, ErrorCode.OUT_OF_BOUNDS),
        ({"timeout": 121}, ErrorCode.OUT_OF_BOUNDS),
    ],
)
def test_bad_settings_are_refused_before_anything_is_written(bare, token_file, changes, code):
    assert code_of(install_hook, bare, settings(token_file, **changes)) is code
    assert not (bare / "hooks" / "pre-receive").exists()


def test_a_work_tree_or_a_relative_path_is_not_a_landing_repository(tmp_path, token_file):
    tree = tmp_path / "tree"
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    assert code_of(install_hook, tree, settings(token_file)) is ErrorCode.INVALID_PATH
    assert code_of(install_hook, Path("b.git"), settings(token_file)) is ErrorCode.INVALID_PATH
    assert code_of(install_hook, tmp_path / "none", settings(token_file)) is ErrorCode.INVALID_PATH


def test_the_rendered_hook_is_valid_python_that_knows_its_config(token_file, tmp_path):
    text = render_hook(settings(token_file), python="/usr/bin/env python3")
    script = tmp_path / "hook.py"
    script.write_text(text)
    done = subprocess.run(
        [
            "python3",
            "-c",
            f"import runpy; g = runpy.run_path({str(script)!r}); print(g['CONFIG']['protect'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "['refs/heads/main']"
