"""``agenttask.checkpoint.prune`` deletes the caller's workspace's rows only (item 8).

The attack: a workspace admin's prune deleted another workspace's phase rows
(``DELETE ... WHERE created_at_ms < ?`` with no workspace predicate).
"""

from __future__ import annotations

from tests.adversarial.served import Served, journal_rows, journal_write

DAY_MS = 24 * 60 * 60 * 1000


def _phase(served: Served, token: str, key: str) -> None:
    created = served.post("/v/agenttask.create", {"verb": "agent.run"}, token)
    assert created.status_code == 200, created.text
    claimed = served.post("/v/agenttask.claimNext", {}, token).json()
    lease = claimed["lease"]
    written = served.post(
        "/v/agenttask.checkpoint.write",
        {
            "taskId": lease["taskId"],
            "phaseKey": key,
            "state": {"step": key},
            "outputs": [],
            "fence": lease["fence"],
        },
        token,
    )
    assert written.status_code == 200, written.text


def test_a_workspace_admins_prune_leaves_other_workspaces_rows(tmp_path):
    data = tmp_path / "data"
    served = Served(data)
    mine, theirs = served.admin, served.token("w2", "admin", 3)
    try:
        _phase(served, mine, "mine")
        _phase(served, theirs, "theirs")
    finally:
        assert served.stop() == 0
    # Forty days pass for every row (the service's clock is the wall clock).
    journal_write(
        data, "UPDATE queue_checkpoint SET created_at_ms = created_at_ms - ?", (40 * DAY_MS,)
    )
    served = Served(data)
    try:
        r = served.post("/v/agenttask.checkpoint.prune", {"olderThanDays": 30}, mine)
        assert r.status_code == 200, r.text
        assert r.json()["pruned"] == 1
    finally:
        assert served.stop() == 0
    left = journal_rows(data, "SELECT workspace, phase_key FROM queue_checkpoint")
    assert sorted(left) == [("w2", "theirs")]
