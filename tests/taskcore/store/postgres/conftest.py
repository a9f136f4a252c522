"""The PostgreSQL backend's own tests: PostgreSQL only, by nature (they test its SQL)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _both_backends(postgres_url: str) -> str:
    """Overrides the store suite's two-backend fixture: these run on PostgreSQL alone."""
    return "postgresql"


@pytest.fixture
def storage(postgres_url: str, tmp_path):
    from taskcore.store import open_storage

    s = open_storage(tmp_path / "data", create=True, database=postgres_url)
    yield s
    s.close()
