"""The taskcore wheel stands alone: no adapter dependency, importable without the adapters.

How the fresh environment is built, and why this needs no extra network in CI:

1. ``uv build --package taskcore --wheel`` builds the wheel from the workspace source (the
   build backend, hatchling, is already in uv's cache after ``./dev`` bootstrapped).
2. ``uv sync --package taskcore --no-dev --frozen --no-install-workspace`` with
   ``UV_PROJECT_ENVIRONMENT`` pointing at a temporary directory creates a venv holding *only*
   taskcore's locked dependencies (attrs, cattrs, PyNaCl, apsw and what they need), taken
   from ``uv.lock``. It runs with ``--offline`` first: after ``./dev`` synced the workspace,
   every one of those wheels is in uv's cache. Only if that fails (a cold cache) is it retried
   with the index allowed.
3. ``uv pip install --offline --no-deps`` puts the built wheel itself into that venv.

The test then imports taskcore and its public submodules there, with the interpreter's own
site-packages and the workspace out of reach, and checks that none of the adapter packages
is importable or was imported.
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".tools" / "bin" / "uv"
ADAPTER_PACKAGES = ("starlette", "uvicorn", "mcp", "click")

pytestmark = pytest.mark.skipif(
    not UV.exists(), reason="needs the pinned uv in .tools (./dev installs it on first use)"
)


def _uv(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(UV), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _ok(_uv("build", "--package", "agenttask-core", "--wheel", "-o", str(out), "--quiet"))
    (built,) = out.glob("agenttask_core-*.whl")
    return built


@pytest.fixture(scope="module")
def core_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("core-only") / "venv"
    env = {"UV_PROJECT_ENVIRONMENT": str(venv)}
    sync = [
        "sync",
        "--package",
        "agenttask-core",
        "--no-dev",
        "--frozen",
        "--no-install-workspace",
        "--python",
        sys.executable,
        "--quiet",
    ]
    if _uv(*sync, "--offline", env=env).returncode != 0:
        _ok(_uv(*sync, env=env))  # cold cache: allow the index
    python = venv / "bin" / "python"
    _ok(_uv("pip", "install", "--offline", "--no-deps", "--python", str(python), str(wheel)))
    return python


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))


def test_the_core_wheel_requires_no_adapter_package(wheel):
    requires = _metadata(wheel).get_all("Requires-Dist") or []
    names = {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower() for r in requires}
    assert names, "the wheel declares its dependencies"
    assert names.isdisjoint(ADAPTER_PACKAGES), names
    assert {"attrs", "cattrs", "pynacl", "apsw"} <= names


def test_the_core_wheel_ships_its_contract_and_type_marker(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "taskcore/py.typed" in names
    assert "taskcore/contract/__init__.py" in names
    assert not [n for n in names if n.startswith(("taskhttp/", "taskmcp/", "taskcli/"))]


IMPORT_CHECK = """
import importlib.util, json, sys
import taskcore, taskcore.contract, taskcore.service, taskcore.store
from taskcore.contract import CAPABILITY, sign_observation
assert CAPABILITY == "agentscm.agent-workflow-tasks/v1"
adapters = {ADAPTERS}
print(json.dumps({
    "file": taskcore.__file__,
    "importable": [n for n in adapters if importlib.util.find_spec(n) is not None],
    "imported": sorted(n for n in sys.modules if n.split(".")[0] in adapters),
}))
"""


def test_taskcore_imports_where_only_the_wheel_and_its_dependencies_exist(core_python, wheel):
    code = IMPORT_CHECK.replace("{ADAPTERS}", repr(ADAPTER_PACKAGES))
    # -I: isolated mode, so neither the current directory nor PYTHONPATH can leak the
    # workspace sources in.
    result = _ok(
        subprocess.run(
            [str(core_python), "-I", "-c", code],
            cwd=core_python.parent,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    )
    report = json.loads(result.stdout)
    assert str(core_python.parents[1]) in report["file"]  # the wheel's copy, not the workspace
    assert report["importable"] == []
    assert report["imported"] == []
