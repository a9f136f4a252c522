"""The revision function and the read-only git helpers, on real repositories."""

import hashlib
import os
from pathlib import Path

import pytest
from taskcore.authority.gitrev import (
    BlobStatus,
    git_revision,
    head_revision,
    read_blob_at,
    resolve_commit,
    revision_entries,
    work_tree_state,
)
from taskcore.errors import ErrorCode, TaskError

from tests.taskcore.workflow.support import commit, git, init_repo

pytestmark = pytest.mark.backend_only("sqlite", reason="git objects and revisions only: no journal")


def _expected(files: dict[str, tuple[str, bytes]]) -> str:
    """The documented function, computed independently from the files we wrote."""
    listing = b"".join(
        mode.encode()
        + b" blob "
        + hashlib.sha256(body).hexdigest().encode()
        + b"\t"
        + path.encode()
        + b"\0"
        for path, (mode, body) in sorted(files.items(), key=lambda kv: kv[0].encode())
    )
    domain = b"agentscm.git-revision.v1"
    return hashlib.sha256(domain + b"\0" + len(listing).to_bytes(8, "big") + listing).hexdigest()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


def test_revision_is_the_documented_digest_of_paths_modes_and_blob_sha256(repo):
    head = commit(repo, {"b.txt": "two\n", "a/x.py": "one\n", "a-b": "three\n"})
    expected = _expected(
        {
            "b.txt": ("100644", b"two\n"),
            "a/x.py": ("100644", b"one\n"),
            "a-b": ("100644", b"three\n"),
        }
    )
    assert git_revision(repo, head) == expected


def test_executable_bit_and_symlinks_are_part_of_the_revision(repo):
    (repo / "run.sh").write_text("echo hi\n")
    os.chmod(repo / "run.sh", 0o755)
    os.symlink("run.sh", repo / "link")
    head = commit(repo, {})
    expected = _expected({"run.sh": ("100755", b"echo hi\n"), "link": ("120000", b"run.sh")})
    assert git_revision(repo, head) == expected


def test_one_changed_byte_changes_the_revision(repo):
    first = commit(repo, {"a.txt": "hello\n"})
    second = commit(repo, {"a.txt": "hellp\n"})
    assert git_revision(repo, first) != git_revision(repo, second)


def test_a_rename_changes_the_revision(repo):
    first = commit(repo, {"a.txt": "hello\n"})
    second = commit(repo, {"a.txt": None, "b.txt": "hello\n"})
    assert git_revision(repo, first) != git_revision(repo, second)


def test_commits_with_the_same_tree_have_the_same_revision(repo):
    first = commit(repo, {"a.txt": "hello\n"}, message="one")
    second = commit(repo, {}, message="two")
    assert first != second
    assert git_revision(repo, first) == git_revision(repo, second)


def test_submodule_pins_are_listed_by_their_object_name(repo):
    commit(repo, {"a.txt": "x\n"})
    pin = "1" * 40
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{pin},vendor/lib")
    git(repo, "commit", "-q", "-m", "pin")
    head = git(repo, "rev-parse", "HEAD")
    entries = {e.path: e for e in revision_entries(repo, head)}
    assert entries[b"vendor/lib"].line() == b"160000 commit " + pin.encode() + b"\tvendor/lib\0"


def test_caller_git_environment_cannot_redirect_the_repository(repo, tmp_path, monkeypatch):
    head = commit(repo, {"a.txt": "mine\n"})
    other = init_repo(tmp_path / "other")
    commit(other, {"a.txt": "theirs\n"})
    honest = git_revision(repo, head)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert git_revision(repo, head) == honest


def test_only_full_object_names_reach_git(repo):
    commit(repo, {"a.txt": "x\n"})
    for bad in ("HEAD", "main", "--output=/tmp/x", "abc", "A" * 40):
        with pytest.raises(TaskError) as info:
            resolve_commit(repo, bad)
        assert info.value.code is ErrorCode.INVALID_VALUE


def test_an_unknown_commit_is_not_found_and_a_tree_is_not_a_commit(repo):
    head = commit(repo, {"a.txt": "x\n"})
    with pytest.raises(TaskError) as info:
        resolve_commit(repo, "0" * 40)
    assert info.value.code is ErrorCode.NOT_FOUND
    tree = git(repo, "rev-parse", f"{head}^{{tree}}")
    with pytest.raises(TaskError) as again:
        resolve_commit(repo, tree)
    assert again.value.code is ErrorCode.INVALID_VALUE


def test_work_tree_state_sees_clean_dirty_and_untracked(repo):
    assert work_tree_state(repo).head is None
    head = commit(repo, {"a.txt": "x\n"})
    clean = work_tree_state(repo)
    assert (clean.head, clean.clean) == (head, True)
    (repo / "a.txt").write_text("y\n")
    assert not work_tree_state(repo).clean
    (repo / "a.txt").write_text("x\n")
    (repo / "new.txt").write_text("n\n")
    assert not work_tree_state(repo).clean


def test_work_tree_state_does_not_write_the_index(repo):
    commit(repo, {"a.txt": "x\n"})
    index = repo / ".git" / "index"
    before = index.read_bytes()
    os.utime(repo / "a.txt", (1, 1))  # a stat change git would normally refresh
    work_tree_state(repo)
    assert index.read_bytes() == before


def test_head_revision_refuses_a_dirty_tree(repo):
    head = commit(repo, {"a.txt": "x\n"})
    assert head_revision(repo) == (head, git_revision(repo, head))
    (repo / "b.txt").write_text("dirty\n")
    with pytest.raises(TaskError) as info:
        head_revision(repo)
    assert info.value.code is ErrorCode.CONFLICT


def test_read_blob_at_reports_each_outcome(repo):
    (repo / "dir").mkdir()
    os.symlink("big.txt", repo / "link")
    head = commit(repo, {"small.txt": "hi\n", "big.txt": "x" * 2000, "dir/f.txt": "f\n"})
    small = read_blob_at(repo, head, "small.txt", max_bytes=1000)
    assert (small.status, small.data) == (BlobStatus.AVAILABLE, b"hi\n")
    big = read_blob_at(repo, head, "big.txt", max_bytes=1000)
    assert (big.status, big.size, big.data) == (BlobStatus.TOO_LARGE, 2000, None)
    assert read_blob_at(repo, head, "link", max_bytes=1000).status == BlobStatus.NOT_A_FILE
    assert read_blob_at(repo, head, "dir", max_bytes=1000).status == BlobStatus.NOT_A_FILE
    assert read_blob_at(repo, head, "nope.txt", max_bytes=1000).status == BlobStatus.MISSING
