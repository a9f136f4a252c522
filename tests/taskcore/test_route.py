"""The route a transport takes from the URL (taskcore.route)."""

import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.route import Route


@pytest.mark.parametrize("repository", ["", "..", ".", "a/b/c", "a//b", "a b", "x" * 129, "/a"])
def test_route_values_outside_the_identifier_pattern_are_refused(repository):
    with pytest.raises(TaskError) as info:
        Route(repository=repository, profile="p")
    assert info.value.code is ErrorCode.INVALID_VALUE
