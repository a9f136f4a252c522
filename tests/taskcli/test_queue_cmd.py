import json

import pytest
from taskcli.queue_cmd import readable

from tests.taskcli.frontdoor import RealLive, agent_task


@pytest.fixture
def live(tmp_path):
    server = RealLive(tmp_path)
    yield server
    server.stop()


def _json(result):
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_create_claim_checkpoint_done_cycle(live):
    task = _json(
        agent_task("queue", "create", "agent.run", "--payload", '{"n": 1}', "--json", *live.args())
    )
    claimed = _json(
        agent_task("queue", "claim-next", "--verb", "agent.run", "--json", *live.args())
    )
    assert claimed["claimed"] is True
    assert claimed["task"]["taskId"] == task["taskId"]
    fence = claimed["lease"]["fence"]
    renewed = _json(
        agent_task(
            "queue",
            "checkpoint",
            task["taskId"],
            "--checkpoint",
            '{"step": 1}',
            "--fence",
            str(fence),
            "--json",
            *live.args(),
        )
    )
    assert renewed["status"] == "LEASED"
    done = _json(
        agent_task(
            "queue",
            "checkpoint",
            task["taskId"],
            "--status",
            "DONE",
            "--fence",
            str(fence),
            "--json",
            *live.args(),
        )
    )
    assert done["status"] == "DONE"
    assert _json(agent_task("queue", "get", task["taskId"], "--json", *live.args()))["status"] == (
        "DONE"
    )
    empty = agent_task("queue", "claim-next", *live.args())
    assert empty.stdout.strip() == "nothing to claim: no queued task this token may run"


def test_readable_output_starts_with_a_summary_line(live):
    created = agent_task("queue", "create", "agent.run", *live.args())
    first = created.stdout.splitlines()[0]
    assert first.endswith("(agent.run) QUEUED")
    claimed = agent_task("queue", "claim-next", *live.args())
    assert " LEASED fence 1 lease until " in claimed.stdout.splitlines()[0]


def test_release_cancel_requeue_and_list(live):
    a = _json(agent_task("queue", "create", "agent.run", "--json", *live.args()))
    b = _json(agent_task("queue", "create", "agent.run", "--json", *live.args()))
    claimed = _json(agent_task("queue", "claim-next", "--json", *live.args()))
    held = claimed["task"]["taskId"]
    released = _json(
        agent_task(
            "queue",
            "release",
            held,
            "--fence",
            str(claimed["lease"]["fence"]),
            "--json",
            *live.args(),
        )
    )
    assert released["status"] == "QUEUED"
    assert _json(agent_task("queue", "cancel", a["taskId"], "--json", *live.args()))["status"] == (
        "CANCELLED"
    )
    again = _json(agent_task("queue", "claim-next", "--json", *live.args()))
    _json(
        agent_task(
            "queue",
            "checkpoint",
            again["task"]["taskId"],
            "--status",
            "FAILED",
            "--last-error",
            "broke",
            "--json",
            *live.args(),
        )
    )
    requeued = _json(agent_task("queue", "requeue", b["taskId"], "--json", *live.args()))
    assert requeued["status"] == "QUEUED"
    listed = agent_task("queue", "list", "--status", "CANCELLED", "--json", *live.args())
    assert a["taskId"] in listed.stdout


def test_conflicts_exit_6_and_bad_flags_exit_3(live):
    task = _json(agent_task("queue", "create", "agent.run", "--json", *live.args()))
    agent_task("queue", "cancel", task["taskId"], *live.args())
    again = agent_task("queue", "cancel", task["taskId"], *live.args())
    assert again.exit_code == 6
    bad = agent_task("queue", "create", "agent.run", "--payload", "{not json", *live.args())
    assert bad.exit_code == 3
    assert "[MALFORMED_JSON]" in bad.stderr


def test_another_workspace_cannot_see_the_task(live):
    task = _json(agent_task("queue", "create", "agent.run", "--json", *live.args()))
    other = agent_task("queue", "get", task["taskId"], *live.args("other"))
    assert other.exit_code == 5


def test_readable_summary_of_a_claim():
    line = readable(
        {
            "claimed": True,
            "task": {
                "taskId": "at_1",
                "verb": "v",
                "status": "LEASED",
                "fence": 2,
                "lease": {"expiresAtMs": 0},
            },
        }
    )
    assert line.splitlines()[0] == "at_1 (v) LEASED fence 2 lease until 1970-01-01T00:00:00Z"


# -- the commands are generated from the registry's queue operations --------------------------

import attrs  # noqa: E402
import click  # noqa: E402
from taskcli.generate import command_name, flag_name  # noqa: E402
from taskcli.queue_cmd import command_for, queue_group, queue_operations  # noqa: E402
from taskcore.queue.operations import QUEUE_VERBS  # noqa: E402
from taskcore.service import Surface, default_registry  # noqa: E402
from taskcore.wirefield import wire_name  # noqa: E402


def _agenttask_operations():
    return [
        op
        for op in default_registry().select(surfaces=(Surface.QUEUE, Surface.ADMIN))
        if op.name.startswith("agenttask.")
    ]


def test_every_agenttask_operation_of_the_registry_has_a_command():
    ops = _agenttask_operations()
    assert {op.name for op in ops} == {op.name for op in queue_operations()}
    assert set(QUEUE_VERBS) <= {op.name for op in ops}  # the nineteen
    for op in ops:
        assert command_for(op) == command_name(op.name.removeprefix("agenttask."))
        assert command_for(op) in queue_group.commands, op.name
    assert len(queue_group.commands) == len(ops)
    assert {"claim-next", "checkpoint-write", "ext-set-waiting", "rank-by-objective"} <= set(
        queue_group.commands
    )


@pytest.mark.parametrize("op", _agenttask_operations(), ids=lambda op: op.name)
def test_a_command_has_one_parameter_per_field_typed_and_required_as_declared(op):
    command = queue_group.commands[command_for(op)]
    params = {p.name: p for p in command.params}
    attrs.resolve_types(op.input_type)
    for field in attrs.fields(op.input_type):
        param = params[field.name]
        required = field.default is attrs.NOTHING
        assert param.required == required, field.name
        if not isinstance(param, click.Argument):
            assert flag_name(wire_name(field)) in param.opts
        base = field.type if field.type in (str, int, float, bool) else None
        if base is int:
            assert isinstance(param.type, click.IntRange)
        elif base is str:
            assert param.type is click.STRING
    fields = {f.name for f in attrs.fields(op.input_type)}
    assert set(params) - fields == {"url", "token_file", "as_json"}


def test_the_first_required_string_is_the_argument():
    get = queue_group.commands["get"].params[0]
    assert isinstance(get, click.Argument)
    assert get.name == "task_id"
    assert get.required
    assert queue_group.commands["reorder"].params[0].name == "task_id"
    assert isinstance(queue_group.commands["create"].params[0], click.Argument)
    assert not any(isinstance(p, click.Argument) for p in queue_group.commands["list"].params)
    feed = queue_group.commands["feed"].params[0]
    assert isinstance(feed, click.Argument)
    assert not feed.required


def test_verbs_without_hand_written_commands_round_trip_through_the_service(live):
    admin = live.args()
    registered = _json(
        agent_task(
            "queue", "verb-register", "docs.write", "--description", "write docs", "--json", *admin
        )
    )
    assert registered["verb"] == "docs.write"
    matter = _json(
        agent_task("queue", "matter-create", "--objective", "ship the docs", "--json", *admin)
    )
    parent = _json(agent_task("queue", "create", "docs.write", "--json", *admin))
    # The old --parent and --matter spellings are aliases of the generated flags.
    child = _json(
        agent_task(
            "queue",
            "create",
            "agent.run",
            "--parent",
            parent["taskId"],
            "--matter",
            matter["matterId"],
            "--json",
            *admin,
        )
    )
    same = _json(
        agent_task(
            "queue",
            "create",
            "agent.run",
            "--parent-task-id",
            parent["taskId"],
            "--matter-id",
            matter["matterId"],
            "--json",
            *admin,
        )
    )
    for task in (child, same):
        assert task["parentTaskId"] == parent["taskId"]
        assert task["matterId"] == matter["matterId"]
    reordered = _json(
        agent_task("queue", "reorder", child["taskId"], "--priority", "7", "--json", *admin)
    )
    assert reordered["priority"] == 7
    claimed = _json(agent_task("queue", "claim", child["taskId"], "--json", *admin))
    fence = str(claimed["lease"]["fence"])
    written = _json(
        agent_task(
            "queue",
            "checkpoint-write",
            child["taskId"],
            "--phase-key",
            "draft",
            "--state",
            '{"page": 3}',
            "--outputs",
            '["a.md"]',
            "--fence",
            fence,
            "--json",
            *admin,
        )
    )
    assert written["phaseKey"] == "draft"
    ext = _json(
        agent_task(
            "queue",
            "ext-create",
            child["taskId"],
            "--title",
            "Docs",
            "--prompt",
            "write them",
            "--source-type",
            "manual",
            "--requires-human-review",
            "--json",
            *admin,
        )
    )
    assert ext["requiresHumanReview"] is True
    waiting = _json(
        agent_task(
            "queue", "ext-set-waiting", child["taskId"], "--waiting", "true", "--json", *admin
        )
    )
    assert waiting["changed"] is True
    assert waiting["ext"]["waitingForChildren"] is True
    listed = _json(agent_task("queue", "list", "--status", "LEASED", "--json", *admin))
    assert [t["taskId"] for t in listed["tasks"]] == [child["taskId"]]


def test_flags_are_checked_before_anything_is_sent(live):
    assert agent_task("queue", "list", "--status", "SLEEPING", *live.args()).exit_code == 2
    assert agent_task("queue", "reorder", "at_1", *live.args()).exit_code == 2  # --priority
    assert agent_task("queue", "release", "at_1", "--fence", "0", *live.args()).exit_code == 2


def test_claim_next_waits_with_wait_ms_and_takes_a_task_created_meanwhile(live):
    import threading
    import time

    def create_soon() -> None:
        time.sleep(0.5)
        agent_task("queue", "create", "agent.run", "--json", *live.args())

    empty_started = time.monotonic()
    empty = _json(agent_task("queue", "claim-next", "--wait-ms", "300", "--json", *live.args()))
    assert empty == {"claimed": False}
    assert time.monotonic() - empty_started >= 0.25
    creator = threading.Thread(target=create_soon)
    creator.start()
    claimed = _json(agent_task("queue", "claim-next", "--wait-ms", "20000", "--json", *live.args()))
    creator.join()
    assert claimed["claimed"] is True


def test_scheduling_flags_and_verbs_round_trip(live):
    task = _json(
        agent_task(
            "queue",
            "create",
            "agent.run",
            "--delay-ms",
            "60000",
            "--max-attempts",
            "3",
            "--backoff",
            '{"initialMs": 10, "maxMs": 100}',
            "--json",
            *live.args(),
        )
    )
    assert task["runAtMs"] - task["createdAtMs"] == 60_000
    assert (task["attempt"], task["maxAttempts"], task["backoff"]["maxMs"]) == (1, 3, 100)
    assert _json(agent_task("queue", "claim-next", "--json", *live.args())) == {"claimed": False}
    both = agent_task(
        "queue", "create", "agent.run", "--run-at", "1", "--delay-ms", "1", *live.args()
    )
    assert both.exit_code == 3
    assert "not both" in both.stderr
    paused = _json(agent_task("queue", "pause", "agent.run", "--json", *live.args()))
    assert paused["paused"] is True
    listed = _json(agent_task("queue", "paused", "--json", *live.args()))
    assert [v["verb"] for v in listed["verbs"]] == ["agent.run"]
    _json(agent_task("queue", "resume", "agent.run", "--json", *live.args()))
    dry = _json(agent_task("queue", "cancel-many", "--dry-run", "--json", *live.args()))
    assert dry["taskIds"] == [task["taskId"]]
    done = _json(agent_task("queue", "cancel-many", "--status", "QUEUED", "--json", *live.args()))
    assert done == {"taskIds": [task["taskId"]], "skipped": 0, "more": False, "dryRun": False}
    again = _json(agent_task("queue", "requeue-many", "--json", *live.args()))
    assert again["skipped"] == 1


# -- queue flow (issue 28): the create flags, create-many, limit-set, limit-list ---------------


def test_flow_flags_dedup_wait_and_limit_over_the_cli(live):
    parent = _json(agent_task("queue", "create", "agent.run", "--json", *live.args()))
    first = _json(
        agent_task(
            "queue",
            "create",
            "agent.run",
            "--unique-key",
            "issue-7",
            "--unique-for",
            "60000",
            "--concurrency-key",
            "repo",
            "--after",
            parent["taskId"],
            "--json",
            *live.args(),
        )
    )
    assert (first["uniqueKey"], first["concurrencyKey"]) == ("issue-7", "repo")
    assert first["after"] == first["blockedBy"] == [parent["taskId"]]
    again = _json(
        agent_task(
            "queue", "create", "agent.run", "--unique-key", "issue-7", "--json", *live.args()
        )
    )
    assert (again["taskId"], again["deduplicated"]) == (first["taskId"], True)
    limit = _json(agent_task("queue", "limit-set", "repo", "--max", "2", "--json", *live.args()))
    assert (limit["key"], limit["max"], limit["leased"]) == ("repo", 2, 0)
    listed = _json(agent_task("queue", "limit-list", "--json", *live.args()))
    assert [x["key"] for x in listed["limits"]] == ["repo"]


def test_create_many_over_the_cli(live):
    tasks = json.dumps([{"verb": "agent.run", "payload": {"n": n}} for n in range(3)])
    answer = _json(agent_task("queue", "create-many", "--tasks", tasks, "--json", *live.args()))
    assert [t["payload"] for t in answer["tasks"]] == [{"n": 0}, {"n": 1}, {"n": 2}]
    refused = agent_task(
        "queue", "create-many", "--tasks", '[{"verb": "no.such"}]', "--json", *live.args()
    )
    assert refused.exit_code != 0
    assert "$.tasks[0].verb" in refused.stdout + refused.stderr
