"""Fixtures for the event tests: a service on the test journal (both backends), a door."""

from __future__ import annotations

import pytest
from taskcore import FakeClock, Service

from tests.taskcore.queue.support import START_MS, Door


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def service(tmp_path, clock):
    svc = Service.open(tmp_path / "data", clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def door(service, clock) -> Door:
    return Door(service, clock)
