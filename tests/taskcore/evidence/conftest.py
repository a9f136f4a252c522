"""The collector fixtures (a registered repository, an authority, a live service) reused here."""

import pytest

from tests.taskcore.collector.conftest import authority, live, make_descriptor, recipe, repo, state
from tests.taskcore.evidence.flow import Flow

__all__ = ["authority", "live", "make_descriptor", "repo", "state"]


@pytest.fixture
def flow(authority, state, tmp_path):
    f = Flow(authority, state, tmp_path)
    yield f
    f.service.close()


@pytest.fixture
def failing_flow(authority, state, tmp_path):
    f = Flow(authority, state, tmp_path, command=recipe("echo broken >&2; exit 1"))
    yield f
    f.service.close()


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend
