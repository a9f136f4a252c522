import pytest

from tests.taskhttp.fixtures import Live


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = Live(tmp_path_factory.mktemp("live")).start()
    yield server
    server.stop()
