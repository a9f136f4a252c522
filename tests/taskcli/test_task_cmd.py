import json

import pytest

from tests.taskcli.frontdoor import RealLive, agent_task

ROUTE = ["--repository", "acme", "--profile", "default"]


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """This module's service lives for the module: its backend does too (the service's
    fixture depends on this one, so it is made again for each backend)."""
    return module_backend


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = RealLive(tmp_path_factory.mktemp("task"))
    yield server
    server.stop()


def test_capabilities_through_the_task_command(live):
    result = agent_task("task", "capabilities", "--json", *ROUTE, *live.args("agent"))
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["capability"] == "agentscm.agent-workflow-tasks/v1"
    assert body["schema_version"] == 1
    for op in ("next", "claim", "heartbeat", "result", "status"):
        assert op in body["result"]["operations"]


def test_readable_output_for_people(live):
    result = agent_task("task", "capabilities", *ROUTE, *live.args("agent"))
    assert "capability: agentscm.agent-workflow-tasks/v1" in result.stdout


@pytest.mark.parametrize("op", ["next", "claim", "heartbeat", "result", "status"])
def test_everyday_operations_reach_their_handlers(live, op):
    # An empty request is refused by the operation's own strict decoder, not by the CLI:
    # the route, the envelope and the token made it to the handler's input type.
    result = agent_task("task", op, "--request", "{}", "--json", *ROUTE, *live.args("agent"))
    assert result.exit_code == 3
    assert json.loads(result.stderr)["code"] == "MISSING_FIELD"


def test_route_comes_from_flags_or_environment(live):
    missing = agent_task("task", "capabilities", *live.args("agent"))
    assert missing.exit_code == 3
    env = {"AGENT_TASK_REPOSITORY": "acme", "AGENT_TASK_PROFILE": "default"}
    assert agent_task("task", "capabilities", *live.args("agent"), env=env).exit_code == 0


def test_unknown_operation_exits_5(live):
    result = agent_task("task", "nope", *ROUTE, *live.args("agent"))
    assert result.exit_code == 5
    assert "[UNKNOWN_OPERATION]" in result.stderr
