"""The taskboard wheel ships its templates and static files (no build step for users)."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UV = ROOT / ".tools" / "bin" / "uv"
PACKAGE = ROOT / "packages" / "taskboard" / "src" / "taskboard"


@pytest.mark.skipif(not UV.exists(), reason="needs the pinned uv in .tools (./dev installs it)")
def test_the_wheel_holds_every_template_and_static_file(tmp_path):
    done = subprocess.run(
        [
            str(UV),
            "build",
            "--package",
            "agenttask-board",
            "--wheel",
            "-o",
            str(tmp_path),
            "--quiet",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("agenttask_board-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"taskboard/{p.relative_to(PACKAGE).as_posix()}"
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.parent.name in ("templates", "static")
    }
    assert expected
    assert expected <= names
