"""The built files: every wheel and sdist, as a user downloads them.

One module-scoped build (``uv build --all-packages``: each sdist from the tree, each wheel
from its sdist, as a release is built) feeds every check here. The metadata checks read the
files; tests/test_distributions.py checks the same rules on the workspace's pyprojects.
"""

from __future__ import annotations

import email.message
import email.parser
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.test_distributions import DISTRIBUTIONS, ROOT, VERSION, check_requirements

UV = ROOT / ".tools" / "bin" / "uv"

pytestmark = pytest.mark.skipif(
    not UV.exists(), reason="needs the pinned uv in .tools (./dev installs it on first use)"
)


@pytest.fixture(autouse=True)
def _both_backends() -> str:
    """Nothing here opens a journal of the test run's backend: one run."""
    return "sqlite"


def _stem(distribution: str) -> str:
    return f"{distribution.replace('-', '_')}-{VERSION}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import subprocess

    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [str(UV), "build", "--all-packages", "-o", str(out), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


def _wheel(built: Path, distribution: str) -> Path:
    return built / f"{_stem(distribution)}-py3-none-any.whl"


def _sdist(built: Path, distribution: str) -> Path:
    return built / f"{_stem(distribution)}.tar.gz"


def _wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{wheel.name.split('-py3')[0]}.dist-info/METADATA").decode()
    return email.parser.Parser().parsestr(text)


def test_every_distribution_is_built_as_a_wheel_and_an_sdist_and_nothing_else(built):
    expected = {_wheel(built, d).name for d in DISTRIBUTIONS}
    expected |= {_sdist(built, d).name for d in DISTRIBUTIONS}
    assert {p.name for p in built.iterdir() if p.name != ".gitignore"} == expected


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_the_wheel_carries_the_license_readme_and_metadata(built, distribution):
    wheel = _wheel(built, distribution)
    meta = _wheel_metadata(wheel)
    assert meta["Name"] == distribution
    assert meta["Version"] == VERSION
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith(f"# {distribution}\n")
    assert meta.get_all("Classifier")
    assert {url.split(",")[0] for url in meta.get_all("Project-URL")} >= {"Homepage", "Source"}
    with zipfile.ZipFile(wheel) as archive:
        license_text = archive.read(f"{_stem(distribution)}.dist-info/licenses/LICENSE")
        package = DISTRIBUTIONS[distribution][1]
        names = archive.namelist()
    assert license_text == (ROOT / "LICENSE").read_bytes()
    assert f"{package}/__init__.py" in names
    assert f"{package}/py.typed" in names
    assert not [n for n in names if n.split("/")[0] in {"tests", "docs"}]


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_the_wheel_depends_only_on_ours_pinned_or_bounded_third_parties(built, distribution):
    requires = _wheel_metadata(_wheel(built, distribution)).get_all("Requires-Dist") or []
    assert requires
    assert check_requirements(distribution, requires, VERSION) == []


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_the_sdist_carries_the_license_readme_and_its_resolved_metadata(built, distribution):
    stem = _stem(distribution)
    with tarfile.open(_sdist(built, distribution)) as archive:
        names = set(archive.getnames())
        license_text = archive.extractfile(f"{stem}/LICENSE").read()
        pkg_info = archive.extractfile(f"{stem}/PKG-INFO").read().decode()
    assert license_text == (ROOT / "LICENSE").read_bytes()
    assert {f"{stem}/README.md", f"{stem}/pyproject.toml", f"{stem}/hatch_build.py"} <= names
    meta = email.parser.Parser().parsestr(pkg_info)
    # The version and the pinned dependencies are resolved into PKG-INFO, so the sdist builds
    # its wheel without the repository's VERSION file.
    assert meta["Version"] == VERSION
    assert check_requirements(distribution, meta.get_all("Requires-Dist") or [], VERSION) == []
