import json

import pytest

from tests.taskcli.frontdoor import RealLive, agent_task


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """This module's service lives for the module: its backend does too (the service's
    fixture depends on this one, so it is made again for each backend)."""
    return module_backend


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = RealLive(tmp_path_factory.mktemp("call"))
    yield server
    server.stop()


def test_call_sends_inline_json_and_prints_the_answer(live):
    created = agent_task(
        "call", "agenttask.create", "--request", '{"verb": "agent.run"}', *live.args()
    )
    assert created.exit_code == 0, created.stderr
    task = json.loads(created.stdout)
    assert task["status"] == "QUEUED"
    got = agent_task(
        "call",
        "agenttask.get",
        "--json",
        "--request",
        json.dumps({"taskId": task["taskId"]}),
        *live.args(),
    )
    assert got.stdout.count("\n") == 1
    assert json.loads(got.stdout)["taskId"] == task["taskId"]


def test_call_reads_the_request_from_a_file_or_stdin(live, tmp_path):
    path = tmp_path / "req.json"
    path.write_text('{"verb": "agent.run", "payload": {"from": "file"}}')
    from_file = agent_task("call", "agenttask.create", "--request", f"@{path}", *live.args())
    assert json.loads(from_file.stdout)["payload"] == {"from": "file"}
    from_stdin = agent_task(
        "call",
        "agenttask.create",
        "--request",
        "-",
        *live.args(),
        input='{"verb": "agent.run", "payload": {"from": "stdin"}}',
    )
    assert json.loads(from_stdin.stdout)["payload"] == {"from": "stdin"}


@pytest.mark.parametrize(
    ("args", "status", "code"),
    [
        (["agenttask.nope"], 5, "UNKNOWN_OPERATION"),
        (["agenttask.get", "--request", "{"], 3, "MALFORMED_JSON"),
        (["agenttask.get", "--request", '{"taskId": "at_1", "x": 1}'], 3, "UNKNOWN_FIELD"),
        (["agenttask.get", "--request", '{"taskId": "at_missing"}'], 5, "NOT_FOUND"),
    ],
)
def test_failures_exit_with_their_kinds_status(live, args, status, code):
    result = agent_task("call", *args, *live.args())
    assert result.exit_code == status
    assert f"[{code}]" in result.stderr
    assert result.stdout == ""


def test_compact_failures_are_json_on_stderr(live):
    result = agent_task("call", "agenttask.nope", "--compact", *live.args())
    assert json.loads(result.stderr)["code"] == "UNKNOWN_OPERATION"


def test_wrong_tier_and_missing_token_exit_4(live):
    assert agent_task("call", "agenttask.list", *live.args("agent")).exit_code == 4
    result = agent_task("call", "agenttask.list", "--url", live.url, env={"AGENT_TASK_TOKEN": ""})
    assert result.exit_code == 4
    assert "[UNAUTHENTICATED]" in result.stderr


def test_url_and_token_come_from_the_environment(live):
    env = {"AGENT_TASK_URL": live.url, "AGENT_TASK_TOKEN_FILE": str(live.token_files["admin"])}
    result = agent_task("call", "agenttask.claimNext", env=env)
    assert result.exit_code == 0, result.stderr


def test_an_unreachable_service_exits_8():
    result = agent_task(
        "call",
        "agenttask.claimNext",
        "--url",
        "http://127.0.0.1:1",
        env={"AGENT_TASK_TOKEN": "atk_x"},
    )
    assert result.exit_code == 8
    assert "[SERVICE_UNREACHABLE]" in result.stderr


def test_workflow_operations_go_to_the_workflow_route(live):
    result = agent_task(
        "call",
        "workflow.capabilities",
        "--repository",
        "acme",
        "--profile",
        "default",
        *live.args(),
    )
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["capability"] == "agentscm.agent-workflow-tasks/v1"
    assert body["operation"] == "capabilities"
    missing = agent_task("call", "workflow.capabilities", *live.args())
    assert missing.exit_code == 3


def test_list_shows_every_registered_operation():
    result = agent_task("call", "--list")
    assert result.exit_code == 0
    for name in ("agenttask.claimNext", "workflow.claim", "session_gate"):
        assert name in result.stdout
    rows = json.loads(agent_task("call", "--list", "--compact").stdout)
    assert {r["name"] for r in rows} >= {"agenttask.checkpoint", "workflow.status"}


def test_list_includes_the_operator_surface():
    from taskcore.events.operations import WEBHOOK_OPERATOR_OPERATIONS
    from taskcore.operator_ops import OPERATOR_OPERATIONS

    rows = json.loads(agent_task("call", "--list", "--compact").stdout)
    operator = {r["name"]: r for r in rows if r["surface"] == "operator"}
    assert set(operator) == set(OPERATOR_OPERATIONS) | set(WEBHOOK_OPERATOR_OPERATIONS)
    assert all(not r["http"] and not r["mcp_tool"] for r in operator.values())
    assert "operator.register_repository" in agent_task("call", "--list").stdout


@pytest.mark.backend_only(
    "sqlite",
    reason="checks that a data dir without a journal is refused, which is SQLite's journal-in-the-data-dir",
)
def test_operator_acts_run_locally_on_the_data_dir_and_are_audited(tmp_path):
    data = str(tmp_path / "data")
    from taskcore.operator_ops import OperatorDesk

    missing = agent_task("call", "operator.token_list", "--data-dir", data)
    assert missing.exit_code != 0  # no journal there: refused, nothing is created
    assert not (tmp_path / "data").exists()

    with OperatorDesk(data, create=True) as desk:
        assert desk.service.audit_count() == 0  # opening it creates the journal
    made = agent_task(
        "call",
        "operator.token_create",
        "--request",
        '{"workspace": "acme", "tier": "agent"}',
        "--data-dir",
        data,
        "--compact",
    )
    assert made.exit_code == 0, made.output
    token_id = json.loads(made.stdout)["token_id"]
    listed = json.loads(
        agent_task("call", "operator.token_list", "--data-dir", data, "--compact").stdout
    )
    assert [t["token_id"] for t in listed["tokens"]] == [token_id]
    refused = agent_task(
        "call", "operator.token_revoke", "--request", '{"token_id": "nope"}', "--data-dir", data
    )
    assert refused.exit_code == 5  # NOT_FOUND
    assert "NOT_FOUND" in refused.output
    with OperatorDesk(data) as desk:
        assert desk.service.audit_count(operation="operator.token_create") == 1
        assert desk.service.audit_count(operation="operator.token_revoke") == 1


def test_call_without_a_verb_is_a_usage_error():
    assert agent_task("call").exit_code == 2


def test_json_is_the_output_flag_and_an_old_style_body_gets_a_hint(live):
    result = agent_task("call", "agenttask.list", "--json", "{}", *live.args())
    assert result.exit_code == 2
    assert "pass the request body with --request" in result.stderr
    listed = agent_task("call", "agenttask.list", "--json", *live.args())
    assert listed.exit_code == 0
    assert listed.stdout.count("\n") == 1
