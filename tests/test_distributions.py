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

import importlib
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


SHARED_FIELDS = ("requires-python", "license", "license-files", "authors", "urls")


def test_the_license_is_apache_2_and_every_package_carries_the_same_text():
    text = (ROOT / "LICENSE").read_text("utf-8")
    assert text.lstrip().startswith("Apache License\n                           Version 2.0")
    assert "END OF TERMS AND CONDITIONS" in text
    for folder, _ in DISTRIBUTIONS.values():
        assert (ROOT / "packages" / folder / "LICENSE").read_text("utf-8") == text, folder


def test_every_package_declares_the_same_license_authors_and_urls_and_a_readme_of_its_own():
    projects = {
        name: _pyproject(ROOT / "packages" / folder / "pyproject.toml")["project"]
        for name, (folder, _) in DISTRIBUTIONS.items()
    }
    first = projects["agenttask-core"]
    assert first["license"] == "Apache-2.0"
    assert first["license-files"] == ["LICENSE"]
    assert set(first["urls"]) >= {"Homepage", "Source", "Changelog", "Issues"}
    for name, project in projects.items():
        assert {field: project[field] for field in SHARED_FIELDS} == {
            field: first[field] for field in SHARED_FIELDS
        }, name
        assert "Typing :: Typed" in project["classifiers"]
        assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639
        readme = (ROOT / "packages" / DISTRIBUTIONS[name][0] / project["readme"]).read_text()
        assert readme.startswith(f"# {name}\n"), name
        assert "are unrelated projects, not ours" in readme


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_each_package_reports_the_installed_version(distribution):
    package = importlib.import_module(DISTRIBUTIONS[distribution][1])
    assert package.__version__ == importlib.metadata.version(distribution) == VERSION


def test_the_changelog_states_the_stability_policy_and_has_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text("utf-8")
    assert f"\n## {VERSION}\n" in changelog
    policy = changelog.split("## Stability policy", 1)[1].split("\n## ", 1)[0]
    for subject in ("wire", "command line", "`__all__`", "journal", "**minor**", "**major**"):
        assert subject in policy, subject
