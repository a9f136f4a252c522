"""The adapters (taskhttp, taskmcp, taskcli) hold no logic of their own.

Every adapter reaches taskcore only through public names: no private (underscore) name of a
taskcore module or object, no apsw or sqlite3, no SQLite implementation module
(``taskcore.store.sqlite*``). The network doors (taskhttp, taskmcp) go further: they never
touch storage at all (no ``taskcore.store``, no ``.storage``), only :class:`taskcore.Service`.
Operator commands of the CLI, which run on the service host, may open the journal through
taskcore's public storage API (``taskcore.store.open_storage``) or a helper such as
:class:`taskcore.auth.TokenAdmin`; they still never see SQL.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _sources(*names):
    return sorted(p for n in names for p in (ROOT / "packages" / n / "src" / n).rglob("*.py"))


NETWORK_DOORS = _sources("taskhttp", "taskmcp")
FILES = _sources("taskhttp", "taskmcp", "taskcli")
ALWAYS_FORBIDDEN = ("apsw", "sqlite3", "taskcore.store.sqlite")
DOOR_FORBIDDEN = (*ALWAYS_FORBIDDEN, "taskcore.store")
STORAGE_NAMES = {"open_storage", "SqliteDatabase", "SqliteStorage", "storage"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _violations(path: Path, *, door: bool) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    forbidden_modules = DOOR_FORBIDDEN if door else ALWAYS_FORBIDDEN
    forbidden_names = STORAGE_NAMES if door else set()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(forbidden_modules) or (
                    alias.name.startswith("taskcore") and any(map(_private, alias.name.split(".")))
                ):
                    out.append(f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(forbidden_modules):
                out.append(f"from {node.module} import ...")
            if node.module.startswith("taskcore"):
                parts = node.module.split(".")
                names = [a.name for a in node.names]
                if any(map(_private, parts)) or any(map(_private, names)):
                    out.append(f"from {node.module} import {', '.join(names)}")
                out.extend(f"imports {n}" for n in names if n in forbidden_names)
        elif isinstance(node, ast.Attribute):
            owner_is_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if _private(node.attr) and not owner_is_self:
                out.append(f"uses private attribute .{node.attr}")
            if node.attr in forbidden_names:
                out.append(f"uses .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in forbidden_names:
            out.append(f"uses {node.id}")
    return out


def test_there_are_adapter_sources_to_check():
    assert len(NETWORK_DOORS) >= 8
    assert len(FILES) >= 15


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_adapter_uses_only_public_taskcore_names_and_no_sqlite(path):
    assert _violations(path, door=False) == []


@pytest.mark.parametrize("path", NETWORK_DOORS, ids=lambda p: str(p.relative_to(ROOT)))
def test_network_doors_never_touch_storage(path):
    assert _violations(path, door=True) == []


def test_the_checker_catches_each_kind_of_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import apsw\n"
        "from taskcore.store import open_storage\n"
        "from taskcore.service import _OPERATION_MODULES\n"
        "import taskcore._private\n"
        "def f(service):\n"
        "    return service.storage, service._registry\n"
    )
    found = _violations(bad, door=True)
    assert "import apsw" in found
    assert "from taskcore.store import ..." in found
    assert "from taskcore.service import _OPERATION_MODULES" in found
    assert "import taskcore._private" in found
    assert "uses .storage" in found
    assert "uses private attribute ._registry" in found
    relaxed = _violations(bad, door=False)
    assert "uses .storage" not in relaxed
    assert "import apsw" in relaxed
