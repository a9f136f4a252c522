"""The attacks run against ``agent-task serve`` on SQLite and on PostgreSQL.

Each test's service is a child process; it inherits ``AGENT_TASK_DATABASE`` from the
``backend`` fixture (tests/conftest.py), so on PostgreSQL the served journal is this session's
test database. A module whose service lives for the module overrides ``_both_backends`` with
``module_backend``. An attack that only exists on one backend says why
(``backend_only``): a lost or full journal *file* is SQLite's.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend
