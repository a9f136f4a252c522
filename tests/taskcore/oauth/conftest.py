"""The OAuth suites touch the journal: each test runs on SQLite and on PostgreSQL."""

import pytest


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend
