"""Checkpoints over git: compiling, recording, superseding and judging currency."""

import pytest
from taskcore.authority import (
    RepositoryPolicy,
    check_current,
    compile_checkpoint,
    git_revision,
    install_requirement,
    load_route,
    record_subject,
    register_profile,
    set_policy,
)
from taskcore.errors import ErrorCode, TaskError

from tests.taskcore.workflow.support import (
    PROFILE,
    REPO,
    WORKSPACE,
    commit,
    requirement,
)


def _view(world):
    with world.storage.read() as tx:
        return load_route(tx, workspace=WORKSPACE, repository_id=REPO, profile_id=PROFILE)


def _current(world, seq) -> bool:
    with world.storage.read() as tx:
        subject = tx.authority.get_subject(seq)
        try:
            check_current(tx, subject)
        except TaskError as err:
            if err.code is not ErrorCode.SUBJECT_STALE:
                raise
            return False
        return True


def test_checkpoint_binds_the_derived_revision_and_commit(world):
    response = world.checkpoint(context="why")
    assert response.subject.revision == git_revision(world.repo, world.head)
    assert response.subject.commit == world.head
    assert response.subject.change_version == 1


def test_new_checkpoint_supersedes_and_the_old_subject_stays_readable(world):
    first = world.checkpoint()
    second = world.checkpoint(commit_name=commit(world.repo, {"src/app.py": "print(1)\n"}))
    with world.storage.read() as tx:
        latest = tx.authority.latest_subject(REPO, PROFILE, "c1")
        old = tx.authority.get_subject(latest.subject_seq - 1)
    assert old.revision == first.subject.revision
    assert old.superseded_at_ms is not None
    assert latest.change_version == second.subject.change_version == 2
    assert not _current(world, old.subject_seq)
    assert _current(world, latest.subject_seq)


def test_policy_epoch_change_makes_the_subject_stale(world):
    world.checkpoint()
    set_policy(
        world.storage,
        world.clock,
        repository_id=REPO,
        policy=RepositoryPolicy(version=1, lease_max_ms=1_000, agent_assertions=True),
    )
    with world.storage.read() as tx:
        seq = tx.authority.latest_subject(REPO, PROFILE, "c1").subject_seq
    assert not _current(world, seq)
    refreshed = world.checkpoint()
    assert refreshed.created
    assert refreshed.subject.policy_epoch == 2


def test_reinstalled_requirement_on_the_profile_makes_the_subject_stale(world):
    world.checkpoint()
    other = requirement(summary="CI, stricter")
    installed = install_requirement(
        world.storage, world.clock, repository_id=REPO, requirement=other
    )
    register_profile(
        world.storage,
        world.clock,
        repository_id=REPO,
        profile_id=PROFILE,
        target="refs/heads/main",
        requirement_digest=installed.requirement_digest,
    )
    assert world.next_task().reason == "subject_stale"


def test_authority_change_between_compile_and_record_is_refused(world):
    view = _view(world)
    compiled = compile_checkpoint(view, change_id="c1", commit=world.head, context=b"")
    set_policy(
        world.storage,
        world.clock,
        repository_id=REPO,
        policy=RepositoryPolicy(version=1, lease_max_ms=2_000, agent_assertions=True),
    )
    with pytest.raises(TaskError) as info, world.storage.write() as tx:
        record_subject(tx, compiled, now_ms=0)
    assert info.value.code is ErrorCode.CONFLICT


def test_missing_or_oversized_or_binary_reference_refuses_the_checkpoint(world):
    head = commit(world.repo, {"docs/guide.md": None})
    with pytest.raises(TaskError, match="missing"):
        world.checkpoint(commit_name=head)
    head = commit(world.repo, {"docs/guide.md": "x" * (128 * 1024 + 1)})
    with pytest.raises(TaskError, match="larger"):
        world.checkpoint(commit_name=head)
    head = commit(world.repo, {"docs/guide.md": b"\xff\xfe\x00"})
    with pytest.raises(TaskError, match="UTF-8"):
        world.checkpoint(commit_name=head)


def test_context_above_the_bound_is_refused(world):
    with pytest.raises(TaskError) as info:
        compile_checkpoint(_view(world), change_id="c1", commit=world.head, context=b"x" * 70_000)
    assert info.value.code is ErrorCode.PAYLOAD_TOO_LARGE


def test_subjects_of_other_changes_are_independent(world):
    a = world.checkpoint("change-a")
    b = world.checkpoint("change-b")
    assert a.subject.change_version == b.subject.change_version == 1
    assert a.tasks[0].task_id != b.tasks[0].task_id
