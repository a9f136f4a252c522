"""Fixtures of the real-harness tests: pinned binaries, the scripted model, the deny proxy.

The binaries are installed from the npm registry into the cache (``tests/harness/install.py``)
the first time a session needs them. A machine without npm fails these tests with the reason;
``AGENT_TASK_SKIP_HARNESS=1`` turns them into skips for a developer who knows why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from taskcore.donegate.config import GateConfig
from taskcore.donegate.index import GateIndex

from tests.ci import skip_or_fail
from tests.harness.deny_proxy import DenyProxy
from tests.harness.install import InstallError, ensure
from tests.harness.scripted_model import ScriptedModel


def _binary(name: str) -> Path:
    if os.environ.get("AGENT_TASK_SKIP_HARNESS") == "1":
        # A developer's switch; under CI it is refused, not obeyed (tests/ci.py).
        skip_or_fail("AGENT_TASK_SKIP_HARNESS=1: the real-harness tests were switched off")
    try:
        return ensure(name).binary
    except InstallError as err:
        pytest.fail(f"the pinned {name} could not be installed: {err}", pytrace=False)


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned Claude Code executable."""
    return _binary("claude-code")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The pinned Codex executable."""
    return _binary("codex")


@pytest.fixture
def proxy() -> Iterator[DenyProxy]:
    """The deny-all proxy; the test fails if anything connected to it."""
    with DenyProxy() as p:
        yield p
        p.wait_quiet()
    assert p.seen == [], f"a harness tried to reach outside 127.0.0.1: {p.seen}"


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    """An empty scripted model; the test extends its script."""
    with ScriptedModel() as m:
        yield m
    assert m.problems == [], f"requests that do not fit the documented shape: {m.problems}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The harness user's home directory."""
    path = tmp_path / "home"
    path.mkdir()
    return path


def gate_index(home: Path) -> GateIndex:
    """The done gate's index at its default place under ``home`` (what the hook wrote)."""
    return GateIndex(
        GateConfig(
            index_path=home / ".local" / "share" / "agent-task" / "gate-index.sqlite",
            claude_root=home / ".claude" / "projects",
            codex_root=home / ".codex" / "sessions",
        )
    )
