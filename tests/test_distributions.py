"""Our distributions: the names we own, one version, and dependencies that name only what we mean.

The names on PyPI that look like ours (``taskcli``, ``taskboard``, ``agent-task``) belong to
other people; ``taskcore``, ``taskhttp`` and ``taskmcp`` are free for anyone to register. So
no distribution of ours may depend on any of them, a sibling is always pinned to ``==`` our
one version (``VERSION``, filled in by each package's ``hatch_build.py``), and a third-party
dependency always carries a lower bound. These tests read the metadata the workspace's
editable installs were built with (the same hook builds the wheels; tests/test_wheels.py
checks the built files).
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
VERSION = (ROOT / "VERSION").read_text("ascii").strip()

DISTRIBUTIONS = {
    # distribution -> (folder under packages/, import package)
    "agenttask": ("taskcli", "taskcli"),
    "agenttask-core": ("taskcore", "taskcore"),
    "agenttask-http": ("taskhttp", "taskhttp"),
    "agenttask-mcp": ("taskmcp", "taskmcp"),
    "agenttask-board": ("taskboard", "taskboard"),
}

NOT_OURS = frozenset(
    {"taskcli", "taskboard", "agent-task", "taskcore", "taskhttp", "taskmcp", "agenttasks"}
)
"""Names taken on PyPI by other people, or free for anyone to take: never a dependency."""

LOWER_BOUNDS = frozenset({">=", "==", "~=", ">", "==="})


def _pyproject(path: Path) -> dict:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def test_every_member_is_one_of_our_distributions_in_its_folder():
    members = {}
    for path in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        members[_pyproject(path)["project"]["name"]] = path.parent.name
    assert members == {name: folder for name, (folder, _) in DISTRIBUTIONS.items()}
    for name, (folder, package) in DISTRIBUTIONS.items():
        assert (ROOT / "packages" / folder / "src" / package / "__init__.py").is_file(), name


def test_the_workspace_root_and_its_sources_name_our_distributions():
    root = _pyproject(ROOT / "pyproject.toml")
    assert set(root["tool"]["uv"]["sources"]) == set(DISTRIBUTIONS)
    assert all(source == {"workspace": True} for source in root["tool"]["uv"]["sources"].values())
    named = {canonicalize_name(Requirement(r).name) for r in root["project"]["dependencies"]}
    assert named == set(DISTRIBUTIONS)


def test_each_package_runs_the_same_version_hook_on_the_one_version_file():
    hook = (ROOT / "packages" / "taskcore" / "hatch_build.py").read_bytes()
    for folder, _ in DISTRIBUTIONS.values():
        package = ROOT / "packages" / folder
        assert (package / "hatch_build.py").read_bytes() == hook, folder
        config = _pyproject(package / "pyproject.toml")
        assert "version" in config["project"]["dynamic"]
        assert "version" not in config["project"]
        settings = config["tool"]["hatch"]["metadata"]["hooks"]["custom"]
        assert (package / settings["version-file"]).resolve() == ROOT / "VERSION"


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_installed_metadata_carries_the_one_version(distribution):
    assert importlib.metadata.version(distribution) == VERSION


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_a_dependency_is_ours_pinned_to_our_version_or_a_bounded_third_party(distribution):
    requirements = importlib.metadata.requires(distribution) or []
    assert requirements, "the metadata lists its dependencies"
    assert check_requirements(distribution, requirements, VERSION) == []


def check_requirements(distribution: str, requirements: list[str], version: str) -> list[str]:
    """The problems of one distribution's ``Requires-Dist`` lines (tests/test_wheels.py too)."""
    problems = []
    for line in requirements:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        operators = {spec.operator for spec in requirement.specifier}
        if name in NOT_OURS:
            problems.append(f"{distribution} depends on {name}, which is not ours")
        elif name in DISTRIBUTIONS:
            if str(requirement.specifier) != f"=={version}":
                problems.append(f"{distribution}: {line} is not pinned to =={version}")
        elif not operators & LOWER_BOUNDS or requirement.url is not None:
            problems.append(f"{distribution}: {line} is not a bounded third-party release")
    return problems


def test_the_check_refuses_a_stranger_an_unpinned_sibling_and_an_unbounded_third_party():
    problems = check_requirements(
        "agenttask",
        [
            "taskboard",
            "agenttask-core",
            "agenttask-http==0.0.9",
            "click",
            "httpx>=0.28.1",
            f"agenttask-mcp=={VERSION}",
        ],
        VERSION,
    )
    assert problems == [
        "agenttask depends on taskboard, which is not ours",
        f"agenttask: agenttask-core is not pinned to =={VERSION}",
        f"agenttask: agenttask-http==0.0.9 is not pinned to =={VERSION}",
        "agenttask: click is not a bounded third-party release",
    ]
