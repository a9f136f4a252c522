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
