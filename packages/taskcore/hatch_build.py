"""hatchling metadata hook: one version for every agent-task distribution, ours pinned to it.

The same file sits in every package directory (``tests/test_distributions.py`` checks the
copies are identical); hatchling runs it from ``[tool.hatch.metadata.hooks.custom]``:

* ``version`` is the repository's ``VERSION`` file (``version-file``, relative to the
  package directory): the one version source.
* ``dependencies`` and ``optional-dependencies`` are the hook table's. A distribution of ours
  (:data:`OURS`) is written there bare, extras allowed (``agenttask-core[postgres]``), and is
  pinned here to ``==`` that version; naming one with a version of its own is an error, so a
  member can never depend on another release of a sibling.

An sdist records the result in its ``PKG-INFO``; hatchling builds the wheel of an sdist from
that (this hook is loaded but has nothing left to fill), so the sdist needs no ``VERSION``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

OURS = frozenset(
    {"agenttask", "agenttask-core", "agenttask-http", "agenttask-mcp", "agenttask-board"}
)
"""Our distributions, by their canonical names."""


def _pinned(requirement: str, version: str) -> str:
    parsed = Requirement(requirement)
    if canonicalize_name(parsed.name) not in OURS:
        return requirement
    if parsed.specifier or parsed.url:
        raise ValueError(f"{requirement!r}: name our own distributions bare (pinned here)")
    parsed.specifier &= f"=={version}"
    return str(parsed)


class OneVersion(MetadataHookInterface):
    """Fill ``version``, ``dependencies`` and ``optional-dependencies`` (see the module)."""

    PLUGIN_NAME = "custom"

    def update(self, metadata: dict[str, Any]) -> None:
        """Set the dynamic fields from ``VERSION`` and the hook's configuration."""
        version = (Path(self.root) / self.config["version-file"]).read_text("ascii").strip()
        metadata["version"] = version
        metadata["dependencies"] = [
            _pinned(r, version) for r in self.config.get("dependencies", [])
        ]
        if "optional-dependencies" in self.config:
            metadata["optional-dependencies"] = {
                extra: [_pinned(r, version) for r in requirements]
                for extra, requirements in self.config["optional-dependencies"].items()
            }
