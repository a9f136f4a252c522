"""Fixtures of the adapter tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """Every module here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return module_backend
