"""psycopg is optional (``agenttask-core[postgres]``): without it a postgresql:// journal is a
typed error naming the extra, and everything on SQLite works.

Each case runs in a child process where psycopg and its pool cannot be imported (a meta-path
finder refuses them), as in an install of ``agenttask-core`` alone; tests/test_wheels.py
checks the same from the built wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

URL = "postgresql://postgres@127.0.0.1:5432/postgres"

WITHOUT_PSYCOPG = """
import sys
from importlib.abc import MetaPathFinder

class NoPsycopg(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("psycopg", "psycopg_pool", "psycopg_binary"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPsycopg())
"""


@pytest.fixture(autouse=True)
def _both_backends(monkeypatch: pytest.MonkeyPatch) -> str:
    """The backends are what this module takes away: one run (the package's fixture runs two)."""
    monkeypatch.delenv("AGENT_TASK_DATABASE", raising=False)
    return "sqlite"


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "AGENT_TASK_DATABASE"},
    )


OPEN = """
import json
from taskcore.errors import TaskError
from taskcore.store import open_storage
try:
    open_storage(sys.argv[1], create=True, database=sys.argv[2])
except TaskError as err:
    print(json.dumps(err.to_json()))
storage = open_storage(sys.argv[1], create=True, database="")
print(json.dumps({"sqlite": storage.backend}))
storage.close()
"""


def test_opening_postgresql_without_psycopg_is_a_typed_error_naming_the_extra(tmp_path: Path):
    done = _child(OPEN, str(tmp_path / "data"), URL)
    assert done.returncode == 0, done.stderr
    refused, opened = (json.loads(line) for line in done.stdout.splitlines())
    assert refused["code"] == "STORAGE_UNAVAILABLE"
    assert "pip install 'agenttask-core[postgres]'" in refused["error"]
    assert refused["details"] == {"extra": "agenttask-core[postgres]"}
    assert opened == {"sqlite": "sqlite"}


CLI = """
sys.argv = ["agent-task", *sys.argv[1:]]
from taskcli.entry import main
main()
"""


@pytest.mark.parametrize(
    "command",
    [["db", "status"], ["db", "migrate"], ["db", "verify"], ["db", "backup", "--to", "b.sqlite"]],
)
def test_the_cli_says_it_in_one_line_without_a_traceback(tmp_path: Path, command):
    done = _child(CLI, *command, "--data-dir", str(tmp_path), "--database", URL)
    assert done.returncode == 8  # UNAVAILABLE
    (line,) = done.stderr.splitlines()
    assert line.endswith("pip install 'agenttask-core[postgres]' [STORAGE_UNAVAILABLE]"), line
