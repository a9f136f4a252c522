"""Task derivation: same inputs give the same task IDs and digests; any bound change differs."""

import pytest
from taskcore.contract import CAPABILITY, WorkflowTask, subject_digest
from taskcore.digest import sha256_hex

from tests.taskcore.workflow.support import commit, make_world


def _tasks(world, response) -> list[WorkflowTask]:
    return [world.task(response, t.step_id) for t in response.tasks]


@pytest.mark.backend_only(
    "sqlite",
    reason="two journals side by side are two data dirs; on PostgreSQL both would be the one shared database",
)
def test_same_inputs_in_two_journals_give_the_same_task_ids_and_digests(tmp_path):
    a = make_world(tmp_path / "a")
    b = make_world(tmp_path / "b")
    try:
        ta = _tasks(a, a.checkpoint())
        tb = _tasks(b, b.checkpoint())
        assert [t.task_id for t in ta] == [t.task_id for t in tb]
        assert [t.digest for t in ta] == [t.digest for t in tb]
    finally:
        a.close()
        b.close()


def test_changed_context_gives_new_task_ids(world):
    first = world.checkpoint(context="fix the bug")
    second = world.checkpoint(context="fix the other bug")
    assert second.created
    assert {t.task_id for t in first.tasks}.isdisjoint(t.task_id for t in second.tasks)


def test_same_tree_under_a_new_commit_is_the_same_subject(world):
    first = world.checkpoint()
    again = commit(world.repo, {}, message="empty commit, same tree")
    second = world.checkpoint(commit_name=again)
    assert not second.created
    assert [t.task_id for t in first.tasks] == [t.task_id for t in second.tasks]


def test_every_task_binds_the_subject_and_carries_its_criteria_inline(world):
    response = world.checkpoint()
    for task in _tasks(world, response):
        assert task.entrypoint.capability == CAPABILITY
        assert task.entrypoint.workflow_digest == task.subject.plan_digest
        assert task.subject.revision == response.subject.revision
        assert task.subject.change_version == response.subject.change_version
        assert len(task.criteria) >= 1
        assert task.task_id == "t-" + subject_digest(task.subject)


def test_named_references_are_pinned_to_the_revision_bytes(world):
    response = world.checkpoint()
    implement = world.task(response, "implement")
    (guide,) = implement.entrypoint.references
    assert guide.sha256 == sha256_hex(b"# Guide\nDo it well.\n")
    assert guide.path == "docs/guide.md"
