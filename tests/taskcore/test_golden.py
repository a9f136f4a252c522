"""``taskcore.golden``: the golden vectors listed and loaded, from a checkout and from a wheel.

In the workspace (an editable install) the module reads the repository's ``golden/``; an
installed wheel carries the same files as package data (``hatch_golden.py`` force-includes
them) and the sdist carries ``golden/`` so that a wheel built from the sdist alone has them
too. Both installs are exercised here: the wheel is built from a clean sdist and installed
into a fresh virtual environment that holds nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from taskcore import golden
from taskcore.errors import ErrorCode, TaskError

from tests.ci import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
UV = ROOT / ".tools" / "bin" / "uv"


def _committed() -> dict[str, bytes]:
    """Every file the vectors ship: the three sets and the format."""
    files = {"README.md": (GOLDEN / "README.md").read_bytes()}
    for kind in golden.kinds():
        for path in sorted((GOLDEN / kind).glob("*.json")):
            files[f"{kind}/{path.name}"] = path.read_bytes()
    return files


# -- from the checkout ----------------------------------------------------------------------------


def test_a_checkout_reads_the_repository_golden_directory():
    assert Path(str(golden.location())) == GOLDEN


@pytest.mark.parametrize("kind", golden.kinds())
def test_names_and_vectors_are_the_files_of_each_set(kind):
    stems = sorted(p.stem for p in (GOLDEN / kind).glob("*.json"))
    assert golden.names(kind) == stems
    loaded = golden.vectors(kind)
    assert [v["name"] for v in loaded] == stems
    assert loaded == [json.loads((GOLDEN / kind / f"{s}.json").read_text()) for s in stems]


def test_the_format_is_readable_with_the_vectors():
    assert "## `negative/NAME.json`" in golden.readme()


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("negative", "../observations/minimal"),
        ("negative", "nope"),
        ("observations", "minimal.json"),
        ("../golden", "minimal"),
        ("generate", "py"),
    ],
)
def test_only_a_listed_vector_is_ever_opened(kind, name):
    with pytest.raises(TaskError) as info:
        golden.load(kind, name)
    assert info.value.code is ErrorCode.NOT_FOUND


# -- from the built distributions -----------------------------------------------------------------


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        list(args), cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and a wheel built again from that sdist alone, away from the checkout."""
    if not UV.exists():
        skip_or_fail("needs the pinned uv in .tools (./dev installs it on first use)")
    out = tmp_path_factory.mktemp("dist")
    package = str(ROOT / "packages" / "taskcore")  # whatever its distribution is named
    _run(str(UV), "build", "--sdist", "-o", str(out), "--quiet", package)
    (sdist,) = out.glob("*.tar.gz")
    unpacked = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (project,) = unpacked.iterdir()
    wheels = tmp_path_factory.mktemp("wheel")
    _run(str(UV), "build", "--wheel", "-o", str(wheels), "--quiet", str(project))
    (wheel,) = wheels.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_sdist_carries_the_golden_directory(built):
    with tarfile.open(built["sdist"]) as archive:
        members = {
            m.name.split("/", 1)[1]: m for m in archive.getmembers() if m.isfile() and "/" in m.name
        }
        shipped = {
            name[len("golden/") :]: archive.extractfile(member).read()  # type: ignore[union-attr]
            for name, member in members.items()
            if name.startswith("golden/")
        }
    assert {k: v for k, v in shipped.items() if k != "generate.py"} == _committed()
    assert "hatch_golden.py" in members


def test_the_wheel_built_from_the_sdist_carries_the_vectors_as_package_data(built):
    prefix = f"taskcore/{golden.PACKAGE_DATA}/"
    with zipfile.ZipFile(built["wheel"]) as archive:
        shipped = {
            name[len(prefix) :]: archive.read(name)
            for name in archive.namelist()
            if name.startswith(prefix)
        }
    assert shipped == _committed()  # byte for byte, and no generator script


WHEEL_PROBE = """
import json, sys
from taskcore import golden
print(json.dumps({
    "location": str(golden.location()),
    "counts": {k: len(golden.names(k)) for k in golden.kinds()},
    "error": golden.load("negative", "small_order_public_key")["error"],
    "readme": golden.readme().startswith("# Golden vectors"),
    "loaded": sorted(m for m in sys.modules if m.startswith("taskcore")),
}))
"""


def test_an_installed_wheel_lists_and_loads_its_own_vectors(built, tmp_path):
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    python = venv / "bin" / "python"
    install = ["pip", "install", "--offline", "--no-deps", "--python", str(python)]
    _run(str(UV), *install, str(built["wheel"]))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [str(python), "-I", "-c", WHEEL_PROBE],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout)
    assert report["location"].startswith(str(venv))  # the wheel's copy, not the checkout
    assert report["location"].endswith(f"taskcore/{golden.PACKAGE_DATA}")
    assert report["counts"] == {k: len(golden.names(k)) for k in golden.kinds()}
    assert report["error"] == {
        "code": "INVALID_SIGNATURE",
        "path": "$.executor_provenance.signature",
    }
    assert report["readme"] is True
    assert "taskcore.codec" not in report["loaded"]  # standard library only
