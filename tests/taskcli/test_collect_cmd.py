from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.taskcli.collector_world import World, cli, git


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.close()


def invoke(world, *args):
    return CliRunner().invoke(
        cli("collector_cmd", "collect_cmd"), list(args), env=world.env(), catch_exceptions=False
    )


def ok(world, *args):
    result = invoke(world, *args, "--json")
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def test_checkpoint_records_the_clean_head(world):
    out = ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    assert out["subject"]["commit"] == git(world.repo, "rev-parse", "HEAD")
    assert out["created"] is True


def test_checkpoint_refuses_a_dirty_work_tree(world):
    (world.repo / "calc.py").write_text("x = 2\n")
    result = invoke(world, "checkpoint", "c1", "--workspace", str(world.repo))
    assert result.exit_code == 6
    assert "uncommitted" in result.stderr


def test_checkpoint_refuses_untracked_files(world):
    (world.repo / "new.txt").write_text("new\n")
    result = invoke(world, "checkpoint", "c1", "--workspace", str(world.repo))
    assert result.exit_code == 6


def test_collect_claims_runs_uploads_and_finalizes_once(world):
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    out = ok(world, "collect", "c1")
    assert out["collected"] is True
    assert out["record_outcome"] == "passed"
    assert out["qualification"]["qualified"] is True
    assert out["qualification"]["next"] == {"operation": "none"}


def test_collect_with_nothing_to_claim_is_a_conflict_and_claims_nothing(world):
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    ok(world, "collect", "c1")
    again = invoke(world, "collect", "c1")
    assert again.exit_code == 6
    assert "nothing to collect" in again.stderr


def test_collect_shows_progress_on_stderr(world):
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    result = invoke(world, "collect", "c1")
    assert result.exit_code == 0
    assert "claiming tests" in result.stderr
    assert "signed and retained" in result.stderr
    assert "qualified: true" in result.stdout


@pytest.mark.backend_only("sqlite", reason="another data dir is another journal only on SQLite")
def test_collect_against_another_data_dir_runs_nothing(world, tmp_path):
    from taskcore.store import open_storage

    other = tmp_path / "other-data"
    open_storage(other, create=True).close()
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    result = invoke(world, "collect", "c1", "--data-dir", str(other))
    assert result.exit_code == 3
    assert "BINDING_MISMATCH" in result.stderr
    assert all(not a.has_reservation() for a in world.state.attempts())


def test_retry_upload_resends_identical_bytes_and_gets_the_historical_view(world):
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    first = ok(world, "collect", "c1")
    [attempt] = world.state.attempts()
    attempt.upload_path.unlink()  # as if the first upload's answer was lost
    [again] = ok(world, "retry-upload")
    assert {k: again[k] for k in first["upload"]} == first["upload"]
    assert ok(world, "retry-upload") == []  # nothing left to send


def test_a_failed_run_is_collected_and_exits_zero(tmp_path):
    world = World(tmp_path, script="echo nope >&2; exit 3")
    try:
        ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
        out = ok(world, "collect", "c1")
        assert out["record_outcome"] == "failed"
        assert out["qualification"]["qualified"] is False
        assert {f["code"] for f in out["qualification"]["failures"]} == {"collector_not_passed"}
    finally:
        world.close()


def test_qualification_prints_the_answer(world):
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    out = ok(world, "qualification", "c1")  # --json: the answer, exit 0 either way
    assert out["qualified"] is False
    assert out["next"]["operation"] == "collector_claim"


def test_qualification_exits_1_when_not_qualified_and_0_when_qualified(world):
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    before = invoke(world, "qualification", "c1")
    assert before.exit_code == 1, before.output
    assert "qualified: false" in before.stdout
    assert "run: agent-task collect c1" in before.stdout  # the answer is still printed in full
    ok(world, "collect", "c1")
    after = invoke(world, "qualification", "c1")
    assert after.exit_code == 0, after.output + after.stderr
    assert "qualified: true" in after.stdout
    unknown = invoke(world, "qualification", "no-such-change")  # an answer: not qualified
    assert (unknown.exit_code, "next: checkpoint" in unknown.stdout) == (1, True)
    refused = invoke(world, "qualification", "c1", "--profile", "no-such-profile")
    assert refused.exit_code == 5, refused.output  # a refusal keeps its own status


def test_a_long_run_renews_its_lease_while_the_command_runs(tmp_path):
    world = World(tmp_path, script="sleep 2.5")
    try:
        ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
        out = ok(world, "collect", "c1", "--lease-ms", "1000")
        assert out["qualification"]["qualified"] is True
        with world.service.storage.read() as tx:
            task = tx.journal.get_task(out["upload"]["task_id"])
            events = [t.event for t in tx.journal.transitions_of_task(task.task_id)]
        assert events.count("heartbeat") >= 2
        assert events[-1] == "collector_upload"
    finally:
        world.close()
