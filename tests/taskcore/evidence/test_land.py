"""``land``: the landing recheck, then a compare-and-swap of the target ref."""

from __future__ import annotations

import subprocess
import threading

import pytest
from taskcore.authority import revoke_executor
from taskcore.authority.gitrev import git_revision
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence import land as land_module
from taskcore.evidence.land import LAND_OPERATION, land_change
from taskcore.store import open_storage

from tests.taskcore.collector.conftest import commit_file, git, head


@pytest.fixture
def work(live):
    """The agent works on branch ``work``; ``main`` is not checked out anywhere."""
    git(live.repo, "switch", "-q", "-c", "work")
    return live


def qualify(live, change="c1"):
    live.checkpoint(change)
    out = live.collect(change)
    assert out["qualification"]["qualified"] is True
    return head(live.repo)


def main_of(live):
    return git(live.repo, "rev-parse", "refs/heads/main")


def land(live, change="c1", **kwargs):
    kwargs.setdefault("into", "main")
    return land_change(
        live.service.storage,
        live.clock,
        repository_id="acme",
        profile_id="default",
        change_id=change,
        **kwargs,
    )


def refused(fn, *args, **kwargs) -> TaskError:
    with pytest.raises(TaskError) as err:
        fn(*args, **kwargs)
    return err.value


def audits(live):
    return live.service.audit_count(operation=LAND_OPERATION)


def test_a_qualified_change_fast_forwards_the_target(work):
    old = main_of(work)
    commit = commit_file(work.repo, "calc.py", "x = 2\n")
    qualify(work)
    outcome = land(work)
    assert (outcome.old, outcome.new, outcome.moved, outcome.merged) == (old, commit, True, False)
    assert outcome.receipt_digest is not None
    assert outcome.ref == "refs/heads/main"
    assert main_of(work) == commit
    assert audits(work) == 1


def test_landing_again_is_a_no_op_that_says_so(work):
    commit_file(work.repo, "calc.py", "x = 3\n")
    qualify(work)
    land(work)
    again = land(work)
    assert again.moved is False
    assert audits(work) == 2


def test_an_unqualified_change_is_not_landed(work):
    old = main_of(work)
    commit_file(work.repo, "calc.py", "x = 4\n")
    work.checkpoint()
    err = refused(land, work)
    assert err.code is ErrorCode.NOT_ADMITTED
    assert err.details["code"] == "not_qualified"
    assert err.details["next"]["operation"] == "collector_claim"
    assert "next: collector_claim" in err.message
    assert main_of(work) == old
    assert audits(work) == 1


def test_a_revoked_executor_after_the_receipt_is_not_landed(work):
    old = main_of(work)
    commit_file(work.repo, "calc.py", "x = 5\n")
    qualify(work)
    revoke_executor(work.authority.storage, work.clock, registration_id="reg-1", reason="lost")
    err = refused(land, work)
    assert err.code is ErrorCode.NOT_ADMITTED
    assert {f["code"] for f in err.details["failures"]} == {"executor_revoked"}
    assert main_of(work) == old


def test_a_change_without_a_subject_is_not_found(work):
    assert refused(land, work, change="nope").code is ErrorCode.NOT_FOUND
    assert audits(work) == 1


def test_another_target_than_the_profiles_is_refused(work):
    commit_file(work.repo, "calc.py", "x = 6\n")
    qualify(work)
    assert refused(land, work, into="release").code is ErrorCode.INVALID_VALUE


def test_a_target_checked_out_in_a_work_tree_is_refused(live):
    commit_file(live.repo, "calc.py", "x = 7\n")
    qualify(live)
    err = refused(land, live)
    assert err.code is ErrorCode.CONFLICT
    assert "checked out" in err.message


def test_a_target_that_moved_on_cannot_fast_forward_without_merge(work):
    base = head(work.repo)
    commit_file(work.repo, "calc.py", "x = 8\n")
    qualify(work)
    git(work.repo, "switch", "-q", "main")
    commit_file(work.repo, "other.txt", "on main\n")
    git(work.repo, "switch", "-q", "--detach", base)
    err = refused(land, work)
    assert err.code is ErrorCode.CONFLICT
    assert "--merge" in err.message


def test_merge_refuses_when_the_merge_is_not_the_qualified_revision(work):
    base = head(work.repo)
    commit_file(work.repo, "calc.py", "x = 9\n")
    qualify(work)
    git(work.repo, "switch", "-q", "main")
    moved = commit_file(work.repo, "other.txt", "only on main\n")
    git(work.repo, "switch", "-q", "--detach", base)
    err = refused(land, work, merge=True)
    assert err.code is ErrorCode.NOT_ADMITTED
    assert "not the qualified revision" in err.message
    assert main_of(work) == moved


def test_merge_lands_a_merge_commit_whose_content_is_the_qualified_revision(work):
    base = head(work.repo)
    # main gets a change the Change also holds (another commit with the same content).
    git(work.repo, "switch", "-q", "main")
    on_main = commit_file(work.repo, "shared.txt", "both\n")
    git(work.repo, "switch", "-q", "work")
    (work.repo / "shared.txt").write_text("both\n")
    git(work.repo, "add", "-A")
    git(work.repo, "commit", "-qm", "the same change, made on the Change")
    change = commit_file(work.repo, "calc.py", "x = 10\n")
    with pytest.raises(subprocess.CalledProcessError):
        git(work.repo, "merge-base", "--is-ancestor", on_main, change)
    qualify(work)
    git(work.repo, "switch", "-q", "--detach", base)
    outcome = land(work, merge=True)
    assert outcome.merged is True
    assert outcome.old == on_main
    assert main_of(work) == outcome.new
    parents = git(work.repo, "rev-list", "--parents", "-n", "1", outcome.new).split()[1:]
    assert parents == [on_main, change]
    assert git_revision(work.repo, outcome.new) == git_revision(work.repo, change)


def test_a_concurrent_move_of_the_target_makes_land_lose_cleanly(work, monkeypatch):
    commit_file(work.repo, "calc.py", "x = 11\n")
    qualify(work)
    rival = git(work.repo, "commit-tree", "HEAD^{tree}", "-p", "main", "-m", "rival")
    real = land_module.landing_decision

    def racing(tx, view, request):
        git(work.repo, "update-ref", "refs/heads/main", rival)
        return real(tx, view, request)

    monkeypatch.setattr(land_module, "landing_decision", racing)
    err = refused(land, work)
    assert err.code is ErrorCode.CONFLICT
    assert "another landing won" in err.message
    assert main_of(work) == rival


def test_two_landings_racing_in_threads_land_exactly_one(work, tmp_path):
    base = head(work.repo)
    first = commit_file(work.repo, "a.txt", "a\n")
    qualify(work, "ca")
    git(work.repo, "switch", "-q", "-c", "other", base)
    second = commit_file(work.repo, "b.txt", "b\n")
    qualify(work, "cb")
    git(work.repo, "switch", "-q", "--detach", base)
    results: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def run(change: str) -> None:
        storage = open_storage(tmp_path / "data")
        try:
            barrier.wait()
            results[change] = land_change(
                storage,
                work.clock,
                repository_id="acme",
                profile_id="default",
                change_id=change,
                into="main",
            )
        except TaskError as err:
            results[change] = err
        finally:
            storage.close()

    threads = [threading.Thread(target=run, args=(c,)) for c in ("ca", "cb")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [c for c, r in results.items() if not isinstance(r, TaskError)]
    lost = [r for r in results.values() if isinstance(r, TaskError)]
    assert len(won) == 1
    assert len(lost) == 1
    assert lost[0].code is ErrorCode.CONFLICT
    assert main_of(work) == {"ca": first, "cb": second}[won[0]]
