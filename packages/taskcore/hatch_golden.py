"""Build hook: ship the golden vectors (the repository's ``golden/``, one copy in git).

The wheel carries them as package data, ``taskcore/golden_vectors/{observations,digests,
negative}/*.json`` and the format's ``README.md``, read through ``taskcore.golden``. The
sdist carries the whole ``golden/`` directory at its top, so that a wheel built from the
sdist finds it there: this hook looks beside the project first (an unpacked sdist), then two
levels up (the repository checkout, ``packages/taskcore`` -> the root). An editable install
gets none (``taskcore.golden`` reads the checkout's ``golden/`` directly).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SETS = ("observations", "digests", "negative")


class GoldenVectors(BuildHookInterface):  # type: ignore[type-arg]
    """Force-include the golden vectors into the wheel and the sdist."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Add the vectors to ``build_data["force_include"]`` (nothing for an editable wheel)."""
        if self.target_name == "wheel" and version == "editable":
            return
        root = Path(self.root)
        for golden in (root / "golden", root.parent.parent / "golden"):
            if (golden / "README.md").is_file() and all((golden / s).is_dir() for s in SETS):
                break
        else:
            raise FileNotFoundError(
                f"the golden vectors are neither in {root / 'golden'} (an sdist) nor in "
                f"{root.parent.parent / 'golden'} (the repository): build from a checkout"
            )
        include = build_data["force_include"]
        if self.target_name == "sdist":
            include[str(golden)] = "golden"
            return
        include[str(golden / "README.md")] = "taskcore/golden_vectors/README.md"
        for name in SETS:
            include[str(golden / name)] = f"taskcore/golden_vectors/{name}"
