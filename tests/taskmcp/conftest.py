"""Fixtures of the adapter tests."""

from __future__ import annotations

import pytest

from tests.taskboard.conftest import browser, page  # noqa: F401 - shared fixtures


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py); a module whose
    service lives for the module overrides this with ``module_backend``."""
    return backend
