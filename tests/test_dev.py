"""``./dev``: the first run says what it is doing instead of staying silent."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _copy_with_stub_uv(tmp_path: Path) -> Path:
    # A stand-in for uv (downloading the real one and every package is what the first run
    # does; here only the script's own steps are checked): it records its arguments and
    # "creates" the environment.
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    (tmp_path / ".tools" / "bin").mkdir(parents=True)
    uv = tmp_path / ".tools" / "bin" / "uv"
    uv.write_text(
        "#!/bin/sh\n"
        'echo "uv $*" >> "$(dirname "$0")/../../uv.calls"\n'
        "mkdir -p .venv/bin\n"
        'printf \'#!/bin/sh\\necho "python $*" >> "$(dirname "$0")/../../python.calls"\\n\''
        " > .venv/bin/python && chmod +x .venv/bin/python\n"
    )
    uv.chmod(0o755)
    return tmp_path


def test_the_first_sync_announces_itself_and_shows_uv_progress(tmp_path):
    root = _copy_with_stub_uv(tmp_path)
    first = subprocess.run(
        ["bash", "dev", "run", "true"], cwd=root, capture_output=True, text=True, check=True
    )
    assert "installing the locked workspace into ./.venv" in first.stderr
    assert "environment ready in" in first.stderr
    assert (root / "uv.calls").read_text().splitlines() == [
        "uv sync --locked --all-packages --compile-bytecode"
    ]
    again = subprocess.run(
        ["bash", "dev", "run", "true"], cwd=root, capture_output=True, text=True, check=True
    )
    assert again.stderr == ""
    # The workspace's own sources (editable installs, which uv leaves alone) are compiled too.
    assert (root / "python.calls").read_text().splitlines() == [
        "python -m compileall -q -j 0 packages/*/src"
    ] * 2
    assert (root / "uv.calls").read_text().splitlines()[-1] == (
        "uv sync --locked --all-packages --compile-bytecode --quiet"
    )
