"""Every store test runs on both backends (``backend`` in tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend
