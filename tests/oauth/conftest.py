"""The browser for the consent page: Debian's Chromium driven by Playwright."""

from tests.taskboard.conftest import browser, page  # noqa: F401 - shared fixtures
