"""The adapters (taskhttp, taskmcp, taskcli) hold no logic of their own.

Every adapter reaches taskcore only through public names: no private (underscore) name of a
taskcore module or object, no apsw or sqlite3. And no adapter touches storage at all: no
``taskcore.store`` module, no ``taskcore.workflow.reads``, no ``open_storage`` /
``open_reader`` / ``local_reader``, no ``.storage`` of a service. The network doors go
through :class:`taskcore.Service`; the CLI's commands on the service host go through
taskcore helpers that own the journal (:class:`taskcore.auth.TokenAdmin`,
:class:`taskcore.operator_ops.AuthorityAdmin`, :class:`taskcore.Service`), and
``collect`` and the Stop hooks through :mod:`taskcore.collector.client` and
:mod:`taskcore.collector.stophook`, which read the local authority themselves.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _sources(*names):
    return sorted(p for n in names for p in (ROOT / "packages" / n / "src" / n).rglob("*.py"))


FILES = _sources("taskhttp", "taskmcp", "taskcli", "taskboard")
FORBIDDEN_MODULES = ("apsw", "sqlite3", "taskcore.store", "taskcore.workflow.reads")
STORAGE_NAMES = {
    "open_storage",
    "open_reader",
    "local_reader",
    "SqliteDatabase",
    "SqliteStorage",
    "storage",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(FORBIDDEN_MODULES) or (
                    alias.name.startswith("taskcore") and any(map(_private, alias.name.split(".")))
                ):
                    out.append(f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(FORBIDDEN_MODULES):
                out.append(f"from {node.module} import ...")
            if node.module.startswith("taskcore"):
                parts = node.module.split(".")
                names = [a.name for a in node.names]
                if any(map(_private, parts)) or any(map(_private, names)):
                    out.append(f"from {node.module} import {', '.join(names)}")
                out.extend(f"imports {n}" for n in names if n in STORAGE_NAMES)
        elif isinstance(node, ast.Attribute):
            owner_is_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            # os._exit is the standard library's documented immediate exit, not a private name.
            os_exit = isinstance(node.value, ast.Name) and (node.value.id, node.attr) == (
                "os",
                "_exit",
            )
            if _private(node.attr) and not owner_is_self and not os_exit:
                out.append(f"uses private attribute .{node.attr}")
            if node.attr in STORAGE_NAMES:
                out.append(f"uses .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in STORAGE_NAMES:
            out.append(f"uses {node.id}")
    return out


def test_there_are_adapter_sources_to_check():
    assert len(FILES) >= 23
    assert {p.name for p in FILES} >= {"collect_cmd.py", "stop_cmd.py", "operator_cmd.py"}
    board = {p.name for p in FILES if "taskboard" in p.parts}
    assert board >= {"app.py", "sessions.py"}


BOARD_FILES = _sources("taskboard")


def test_the_board_reaches_the_core_only_through_registry_operations():
    """The board holds no logic: every use of the service is ``Service.call`` (an operation).

    ``functools.partial(service.call, ...)`` counts as a call of ``service.call``.
    """
    used = set()
    for path in BOARD_FILES:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "service"
            ):
                used.add(node.attr)
    assert used == {"call"}
    imported = set()
    for path in BOARD_FILES:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("taskcore")
            ):
                imported.update(f"{node.module}.{a.name}" for a in node.names)
    # The board needs the service, its door and the error type; nothing of a domain (and its
    # __version__, the installed distribution's). Its live updates read the event stream
    # (opened by observe.events, an operation like any other) through the stream's own entry
    # points.
    assert imported <= {
        "taskcore.Door",
        "taskcore.ErrorCode",
        "taskcore.Service",
        "taskcore.TaskError",
        "taskcore.lazy.installed_version",
        "taskcore.events.stream.Run",
        "taskcore.events.stream.event_frames",
        "taskcore.events.stream.open_events",
        "taskcore.limits.EVENTS_WRITE_TIMEOUT_SECONDS",
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_adapter_uses_only_public_taskcore_names_and_never_touches_storage(path):
    assert _violations(path) == []


def test_the_checker_catches_each_kind_of_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import apsw\n"
        "from taskcore.store import open_storage\n"
        "from taskcore.store.storage import SqliteStorage\n"
        "from taskcore.workflow.reads import open_reader\n"
        "from taskcore.service import _OPERATION_MODULES\n"
        "import taskcore._private\n"
        "def f(service):\n"
        "    return service.storage, service._registry\n"
    )
    found = _violations(bad)
    assert "import apsw" in found
    assert "from taskcore.store import ..." in found
    assert "from taskcore.store.storage import ..." in found
    assert "from taskcore.workflow.reads import ..." in found
    assert "imports open_storage" in found
    assert "imports open_reader" in found
    assert "imports SqliteStorage" in found
    assert "from taskcore.service import _OPERATION_MODULES" in found
    assert "import taskcore._private" in found
    assert "uses .storage" in found
    assert "uses private attribute ._registry" in found
