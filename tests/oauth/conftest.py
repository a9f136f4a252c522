"""The OAuth end-to-end suites: each test runs on SQLite and on PostgreSQL; the consent page
in Debian's Chromium driven by Playwright (the board's browser fixtures)."""

import pytest

from tests.taskboard.conftest import browser, page  # noqa: F401 - shared fixtures


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    return backend
