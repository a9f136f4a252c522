"""The pre-receive hook with real ``git push`` into a bare repository and a real HTTP service."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.authority import install_requirement, register_profile, revoke_executor
from taskcore.authority.gitrev import git_revision
from taskcore.authority.operator import collector_test_requirement
from taskcore.evidence import landing_hook
from taskcore.evidence.landing_install import HookSettings, install_hook
from taskhttp.app import create_app
from taskhttp.server import BackgroundServer

from tests.taskcore.collector.conftest import commit_file, git, head


def push(repo: Path, bare: Path, refspec: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), "push", "--porcelain", str(bare), refspec],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )


def ref_of(bare: Path, ref: str) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(bare), "rev-parse", "--verify", "-q", ref],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None


class Landing:
    """``live`` over real HTTP, a bare repository cloned from it, the hook installed."""

    def __init__(self, live, tmp_path: Path, *, url: str | None = None, **settings) -> None:
        self.live = live
        self.repo = live.repo
        self.server = BackgroundServer(create_app(live.service))
        self.url = self.server.start()
        self.bare = tmp_path / "bare.git"
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(self.repo), str(self.bare)],
            check=True,
            capture_output=True,
        )
        hook = issue_token(
            live.service.storage, live.clock, workspace="w1", tier=Tier.AGENT, name="hook"
        )
        self.token_file = tmp_path / "hook.token"
        self.token_file.write_text(hook.token + "\n")
        self.settings = HookSettings(
            url=url or self.url,
            repository="acme",
            profile="default",
            protect=("refs/heads/main",),
            token_file=str(self.token_file),
            timeout=settings.pop("timeout", 10),
            fail_open=settings.pop("fail_open", False),
        )
        install_hook(self.bare, self.settings)
        self.stopped = False

    def push_main(self):
        return push(self.repo, self.bare, "HEAD:refs/heads/main")

    def stop(self) -> None:
        if not self.stopped:
            self.server.stop()
            self.stopped = True


@pytest.fixture
def landing(live, tmp_path):
    world = Landing(live, tmp_path)
    yield world
    world.stop()


def qualify(live, change="c1"):
    live.checkpoint(change)
    out = live.collect(change)
    assert out["qualification"]["qualified"] is True
    return head(live.repo)


# -- the decision -----------------------------------------------------------------------------


def test_a_qualified_push_is_accepted(landing):
    commit = commit_file(landing.repo, "calc.py", "x = 2\n")
    qualify(landing.live)
    done = landing.push_main()
    assert done.returncode == 0, done.stderr
    assert "admitted (Change c1, receipt" in done.stderr
    assert ref_of(landing.bare, "refs/heads/main") == commit


def test_an_unqualified_push_is_refused_with_reason_and_next(landing):
    before = ref_of(landing.bare, "refs/heads/main")
    commit_file(landing.repo, "calc.py", "x = 3\n")
    landing.live.checkpoint()
    done = landing.push_main()
    assert done.returncode != 0
    assert "REFUSED: not_qualified" in done.stderr
    assert "next: collector_claim t-" in done.stderr
    assert "(Change c1)" in done.stderr
    assert ref_of(landing.bare, "refs/heads/main") == before


def test_a_push_of_a_revision_never_checkpointed_is_refused(landing):
    commit_file(landing.repo, "calc.py", "x = 4\n")
    done = landing.push_main()
    assert done.returncode != 0
    assert "REFUSED: revision_not_checkpointed" in done.stderr
    assert "next: checkpoint" in done.stderr


def test_revoking_the_executor_after_the_receipt_refuses_the_push(landing):
    before = ref_of(landing.bare, "refs/heads/main")
    commit_file(landing.repo, "calc.py", "x = 5\n")
    qualify(landing.live)
    revoke_executor(
        landing.live.authority.storage, landing.live.clock, registration_id="reg-1", reason="lost"
    )
    done = landing.push_main()
    assert done.returncode != 0
    assert "REFUSED: not_qualified" in done.stderr
    assert "executor_revoked" in done.stderr
    assert ref_of(landing.bare, "refs/heads/main") == before


def test_a_changed_requirement_refuses_the_push(landing):
    commit_file(landing.repo, "calc.py", "x = 6\n")
    qualify(landing.live)
    changed = install_requirement(
        landing.live.authority.storage,
        landing.live.clock,
        repository_id="acme",
        requirement=collector_test_requirement("tests", "a changed bar"),
    )
    register_profile(
        landing.live.authority.storage,
        landing.live.clock,
        repository_id="acme",
        profile_id="default",
        target="main",
        requirement_digest=changed.requirement_digest,
    )
    done = landing.push_main()
    assert done.returncode != 0
    assert "REFUSED: subject_not_current" in done.stderr
    assert "next: checkpoint" in done.stderr


def test_an_authority_that_is_down_refuses_the_push(landing):
    commit_file(landing.repo, "calc.py", "x = 7\n")
    qualify(landing.live)
    landing.stop()
    done = landing.push_main()
    assert done.returncode != 0
    assert "is unreachable (the landing check fails closed)" in done.stderr


def test_a_push_that_touches_no_protected_ref_is_untouched_even_with_the_authority_down(
    landing,
):
    commit = commit_file(landing.repo, "calc.py", "x = 8\n")
    landing.stop()
    done = push(landing.repo, landing.bare, "HEAD:refs/heads/feature")
    assert done.returncode == 0, done.stderr
    assert "agent-task" not in done.stderr
    assert ref_of(landing.bare, "refs/heads/feature") == commit


def test_deleting_a_protected_ref_is_refused(landing):
    done = push(landing.repo, landing.bare, ":refs/heads/main")
    assert done.returncode != 0
    assert "a protected ref cannot be deleted" in done.stderr
    assert ref_of(landing.bare, "refs/heads/main") is not None


def test_a_rejected_token_refuses_the_push(landing):
    commit_file(landing.repo, "calc.py", "x = 9\n")
    qualify(landing.live)
    landing.token_file.write_text("atk_nope.nope\n")
    done = landing.push_main()
    assert done.returncode != 0
    assert "rejected the hook's token (HTTP 401)" in done.stderr


def test_an_unreadable_token_file_refuses_the_push(landing):
    commit_file(landing.repo, "calc.py", "x = 10\n")
    landing.token_file.unlink()
    done = landing.push_main()
    assert done.returncode != 0
    assert "the token file cannot be read" in done.stderr


def test_a_mixed_push_is_refused_whole(landing):
    before = ref_of(landing.bare, "refs/heads/main")
    commit_file(landing.repo, "calc.py", "x = 11\n")
    done = subprocess.run(
        [
            "git",
            "-C",
            str(landing.repo),
            "push",
            "--atomic",
            str(landing.bare),
            "HEAD:refs/heads/main",
            "HEAD:refs/heads/side",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert ref_of(landing.bare, "refs/heads/main") == before
    assert ref_of(landing.bare, "refs/heads/side") is None


# -- the timeout and --fail-open --------------------------------------------------------------


class Silent:
    """A TCP server that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_a_slow_authority_times_out_and_refuses(live, tmp_path):
    silent = Silent()
    world = Landing(live, tmp_path, url=silent.url, timeout=1)
    try:
        commit_file(live.repo, "calc.py", "x = 12\n")
        done = world.push_main()
        assert done.returncode != 0
        assert "timed out (the landing check fails closed)" in done.stderr
    finally:
        world.stop()
        silent.close()


class Trickle(Silent):
    """Answers one byte every 0.3 s: each read succeeds, the whole answer never arrives."""

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    @staticmethod
    def _drip(conn: socket.socket) -> None:
        try:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 100:
                conn.sendall(bytes([byte]))
                time.sleep(0.3)
        except OSError:
            return


def test_the_timeout_bounds_the_whole_exchange_not_each_read(live, tmp_path):
    trickle = Trickle()
    world = Landing(live, tmp_path, url=trickle.url, timeout=2)
    try:
        commit_file(live.repo, "calc.py", "x = 15\n")
        started = time.monotonic()
        done = world.push_main()
        assert time.monotonic() - started < 15
        assert done.returncode != 0
        assert "timed out (the landing check fails closed)" in done.stderr
    finally:
        world.stop()
        trickle.close()


def test_fail_open_lets_an_unchecked_update_through_and_says_so(live, tmp_path):
    world = Landing(live, tmp_path, fail_open=True)
    try:
        commit = commit_file(live.repo, "calc.py", "x = 13\n")
        world.stop()
        done = world.push_main()
        assert done.returncode == 0, done.stderr
        assert "NOT CHECKED" in done.stderr
        assert "--fail-open" in done.stderr
        assert ref_of(world.bare, "refs/heads/main") == commit
    finally:
        world.stop()


def test_fail_open_never_lets_a_refusal_through(live, tmp_path):
    world = Landing(live, tmp_path, fail_open=True)
    try:
        commit_file(live.repo, "calc.py", "x = 14\n")
        done = world.push_main()
        assert done.returncode != 0
        assert "REFUSED: revision_not_checkpointed" in done.stderr
    finally:
        world.stop()


# -- the hook's revision is the authority's revision ------------------------------------------


def test_the_hooks_revision_equals_git_revision_for_every_kind_of_leaf(repo, monkeypatch):
    # repo has a regular file, an executable, a symlink and a subdirectory; add a gitlink.
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head(repo)},pinned")
    git(repo, "commit", "-qm", "a submodule pin")
    commit = head(repo)
    monkeypatch.chdir(repo)
    assert landing_hook.commit_revision(commit) == git_revision(repo, commit)


def test_the_hook_refuses_an_object_it_cannot_list(repo, monkeypatch):
    monkeypatch.chdir(repo)
    with pytest.raises(landing_hook.HookError):
        landing_hook.commit_revision("f" * 40)


def test_the_hook_template_imports_only_the_standard_library():
    tree = ast.parse(Path(landing_hook.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_run_ignores_updates_of_unprotected_refs_without_reading_the_token():
    config = {"protect": ["refs/heads/main"], "token_file": "/nonexistent/token"}
    data = f"{'0' * 40} {'a' * 40} refs/heads/feature\n".encode()

    class Out:
        text = ""

        def write(self, s):
            self.text += s

    out = Out()
    assert landing_hook.run(data, config, out) == 0
    assert out.text == ""
