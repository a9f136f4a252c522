"""``golden/generate.py`` reproduces every committed vector and never rewrites one.

The vectors are written once. Running the generator into an empty directory must give every
committed file byte for byte (so the script in the repository is the one that wrote them),
and running it over a directory where a vector differs must keep the file, say so and exit 1
(so a change to the script can never silently replace a published vector).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
SETS = ("observations", "digests", "negative")


def _generate(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GOLDEN / "generate.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for s in SETS for p in (root / s).glob("*.json")
    }


def test_the_generator_reproduces_every_committed_vector(tmp_path):
    done = _generate(tmp_path)
    assert done.returncode == 0, done.stderr
    assert _files(tmp_path) == _files(GOLDEN)


def test_the_generator_keeps_a_vector_that_differs_and_fails(tmp_path):
    for name in SETS:
        shutil.copytree(GOLDEN / name, tmp_path / name)
    victim = tmp_path / "negative" / "wrong_version.json"
    altered = victim.read_text(encoding="ascii").replace('"UNSUPPORTED_VERSION"', '"X"')
    victim.write_text(altered, encoding="ascii")
    (tmp_path / "digests" / "task_minimal.json").unlink()
    done = _generate(tmp_path)
    assert done.returncode == 1
    assert "DIFFERS negative/wrong_version.json" in done.stdout
    assert victim.read_text(encoding="ascii") == altered  # kept as it was, never rewritten
    assert "wrote digests/task_minimal.json" in done.stdout  # a missing one is written
