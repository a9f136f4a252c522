import pytest

from tests.taskhttp.fixtures import Live


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = Live(tmp_path_factory.mktemp("live")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """Every module here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return module_backend
