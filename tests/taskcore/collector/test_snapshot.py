from __future__ import annotations

import os
import stat

import pytest
from taskcore.authority.gitrev import git_revision
from taskcore.collector.snapshot import directory_entries, materialize, remove_tree
from taskcore.errors import ErrorCode, TaskError

from .conftest import commit_file, git, head


def test_the_materialized_files_are_exactly_the_commit(repo, tmp_path):
    commit = head(repo)
    evidence = materialize(repo, commit, git_revision(repo, commit), tmp_path / "snap")
    snap = tmp_path / "snap"
    assert (snap / "README.md").read_text() == "hello\n"
    assert (snap / "sub" / "data.txt").read_text() == "data\n"
    assert os.readlink(snap / "link") == "README.md"
    assert os.stat(snap / "run.sh").st_mode & stat.S_IXUSR
    assert not os.stat(snap / "README.md").st_mode & 0o077
    assert evidence.file_count == 4
    assert evidence.materialized_revision == git_revision(repo, commit)


def test_the_snapshot_directory_is_owner_private(repo, tmp_path):
    commit = head(repo)
    materialize(repo, commit, git_revision(repo, commit), tmp_path / "snap")
    assert stat.S_IMODE(os.stat(tmp_path / "snap").st_mode) == 0o700


def test_gitattributes_cannot_change_what_is_materialized(repo, tmp_path):
    (repo / ".gitattributes").write_text("README.md export-ignore\nsub/* export-subst\n")
    commit_file(repo, "sub/data.txt", "$Format:%H$\n")
    commit = head(repo)
    materialize(repo, commit, git_revision(repo, commit), tmp_path / "snap")
    assert (tmp_path / "snap" / "README.md").exists()
    assert (tmp_path / "snap" / "sub" / "data.txt").read_text() == "$Format:%H$\n"


def test_a_revision_that_is_not_the_commits_is_refused(repo, tmp_path):
    with pytest.raises(TaskError) as err:
        materialize(repo, head(repo), "0" * 64, tmp_path / "snap")
    assert err.value.code is ErrorCode.REVISION_MISMATCH


def test_an_older_commit_is_materialized_not_the_work_tree(repo, tmp_path):
    old = head(repo)
    commit_file(repo, "README.md", "new\n")
    materialize(repo, old, git_revision(repo, old), tmp_path / "snap")
    assert (tmp_path / "snap" / "README.md").read_text() == "hello\n"


def test_an_unknown_commit_is_refused(repo, tmp_path):
    with pytest.raises(TaskError):
        materialize(repo, "1" * 40, "0" * 64, tmp_path / "snap")
    assert not (tmp_path / "snap").exists()


def test_directory_entries_reproduce_the_revision_of_a_checkout(repo):
    from taskcore.authority.gitrev import revision_listing, revision_of_listing

    git(repo, "status")
    entries = sorted(
        (e for e in directory_entries(repo) if not e.path.startswith(b".git/")),
        key=lambda e: e.path,
    )
    # the work tree's files were written by git with default permissions: same modes, bytes
    assert revision_of_listing(revision_listing(entries)) == git_revision(repo, head(repo))


def test_remove_tree_removes_read_only_directories(tmp_path):
    (tmp_path / "t" / "ro").mkdir(parents=True)
    (tmp_path / "t" / "ro" / "f").write_text("x")
    os.chmod(tmp_path / "t" / "ro", 0o500)
    assert remove_tree(tmp_path / "t")
    assert not (tmp_path / "t").exists()
