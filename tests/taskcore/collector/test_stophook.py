"""One task-stop hook run against an in-process authority; installing the hook."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest
from taskcore.auth import read_token_file, revoke_token
from taskcore.collector.stophook import (
    CounterError,
    counter_path,
    hook_command_line,
    install_hook,
    install_stop_hook,
    operation_in_progress,
    read_counter,
    read_payload,
    run_hook,
    write_counter,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import GATE_STDIN_MAX_BYTES, STOP_CONTINUATIONS_MAX

from .conftest import InProcessClient, commit_file, git

PAYLOAD = b'{"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false}'


@pytest.fixture(autouse=True)
def stop_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_STOP_DIR", str(tmp_path / "stop"))
    return tmp_path / "stop"


def in_process(live, asked=None):
    def connect(token_file, timeout):
        if asked is not None:
            asked.append((token_file, timeout))
        return InProcessClient(live.service, read_token_file(token_file))

    return connect


class Unreachable:
    def workflow(self, repository, profile, op, body):
        raise TaskError(
            ErrorCode.SERVICE_UNREACHABLE, "the service at http://127.0.0.1:9 did not answer"
        )

    def upload(self, repository, profile, data):
        raise AssertionError("the hook never uploads")


class Answering:
    def __init__(self, answer=None, error=None):
        self.answer, self.error = answer, error

    def workflow(self, repository, profile, op, body):
        if self.error is not None:
            raise TaskError(self.error, "refused")
        return self.answer

    def upload(self, repository, profile, data):
        raise AssertionError("the hook never uploads")


def offline(token_file, timeout):
    return Unreachable()


def hook(live, harness="claude-code", payload=PAYLOAD, connect=None, **changes):
    args = dict(
        change="c1",
        repository="acme",
        profile="default",
        token_file=live.token_file,
        workspace=live.repo,
        data_dir=live.data_dir,
    )
    args.update(changes)
    return run_hook(harness, stdin=io.BytesIO(payload), connect=connect or in_process(live), **args)


def feedback(text, harness="claude-code"):
    out = json.loads(text)
    body = (
        out["hookSpecificOutput"]["additionalContext"]
        if harness == "claude-code"
        else out["reason"]
    )
    return json.loads(body.rsplit("\n", 1)[1])


def collect(live, change="c1"):
    live.checkpoint(change)
    live.collect(change)


# -- the decision -------------------------------------------------------------------------------


def test_a_qualified_clean_workspace_passes_silently(live):
    collect(live)
    asked = []
    assert hook(live, connect=in_process(live, asked)) == (0, "")
    assert asked == [(live.token_file, 30.0)]  # the seed's 30 s limit on the question


def test_an_uncollected_subject_blocks_with_next_collector_claim(live):
    live.checkpoint()
    status, text = hook(live)
    assert status == 0
    body = feedback(text)
    assert body["next"]["operation"] == "collector_claim"
    assert "agent-task collect" in body["next_action"]


def test_no_subject_at_all_blocks_with_next_checkpoint_without_asking(live):
    asked = []
    assert feedback(hook(live, connect=in_process(live, asked))[1])["next"] == {
        "operation": "checkpoint"
    }
    assert asked == []


def test_an_uncommitted_edit_blocks_with_next_checkpoint(live):
    collect(live)
    (live.repo / "README.md").write_text("edited\n")
    assert feedback(hook(live)[1])["next"] == {"operation": "checkpoint"}


def test_a_new_uncheckpointed_commit_blocks_with_next_checkpoint(live):
    collect(live)
    commit_file(live.repo, "README.md", "more\n")
    assert feedback(hook(live)[1])["next"] == {"operation": "checkpoint"}


def test_an_operation_in_progress_is_not_clean(live):
    collect(live)
    git_dir = live.repo / ".git"
    (git_dir / "MERGE_HEAD").write_text(git(live.repo, "rev-parse", "HEAD") + "\n")
    assert feedback(hook(live)[1])["next"] == {"operation": "checkpoint"}
    (git_dir / "MERGE_HEAD").unlink()
    assert hook(live) == (0, "")


def test_a_revoked_token_blocks_as_token_rejected(live):
    collect(live)
    revoke_token(live.service.storage, live.clock, live.token.split("_")[1])
    body = feedback(hook(live)[1])
    assert body["error"] == "token_rejected"


def test_an_offline_service_blocks_as_service_request_failed(live):
    collect(live)
    body = feedback(hook(live, connect=offline)[1])
    assert body["error"] == "service_request_failed"
    assert "127.0.0.1" not in json.dumps(body)


def test_a_malformed_answer_blocks_as_malformed_response(live):
    collect(live)
    bad = {
        "capability": "x",
        "schema_version": 1,
        "operation": "qualification",
        "result": {"qualified": True, "next": {"operation": "rm -rf"}},
    }
    body = feedback(hook(live, connect=lambda t, s: Answering(bad))[1])
    assert body["error"] == "malformed_response"
    assert "rm -rf" not in json.dumps(body)


@pytest.mark.parametrize(
    ("answer", "error", "category"),
    [
        ({"operation": "status", "result": {}}, None, "malformed_response"),
        (None, ErrorCode.MALFORMED_RESPONSE, "malformed_response"),
        (None, ErrorCode.FORBIDDEN, "token_rejected"),
        (None, ErrorCode.AUTHORIZATION_CHANGED, "token_rejected"),
        (None, ErrorCode.BUSY, "service_request_failed"),
    ],
)
def test_each_failed_question_blocks_with_its_fixed_category(live, answer, error, category):
    collect(live)
    body = feedback(hook(live, connect=lambda t, s: Answering(answer, error))[1])
    assert body["error"] == category
    assert body["next"] == {"operation": "none"}


def test_a_malformed_answer_after_an_edit_says_checkpoint(live):
    collect(live)

    class EditingWhileAsked(Answering):
        def workflow(self, repository, profile, op, body):
            (live.repo / "README.md").write_text("edited during the call\n")
            return {"operation": "qualification", "result": {"qualified": "yes"}}

    body = feedback(hook(live, connect=lambda t, s: EditingWhileAsked())[1])
    assert body["error"] == "malformed_response"
    assert body["next"] == {"operation": "checkpoint"}


def test_a_change_during_the_call_blocks_as_changed_during_run(live):
    collect(live)

    class CommittingWhileAsked(InProcessClient):
        def workflow(self, repository, profile, op, body):
            answer = super().workflow(repository, profile, op, body)
            commit_file(live.repo, "README.md", "moved on\n")
            return answer

    body = feedback(
        hook(live, connect=lambda t, s: CommittingWhileAsked(live.service, live.token))[1]
    )
    assert body["error"] == "changed_during_run"
    assert body["next"] == {"operation": "checkpoint"}


@pytest.mark.backend_only(
    "sqlite", reason="a missing data dir means a missing journal only on SQLite"
)
def test_a_missing_data_dir_blocks_and_is_not_created(live, tmp_path):
    missing = tmp_path / "nowhere"
    body = feedback(hook(live, data_dir=missing)[1])
    assert body["error"] == "local_store_unavailable"
    assert not missing.exists()


def test_a_workspace_that_is_not_a_work_tree_blocks_as_workspace_unavailable(live, tmp_path):
    live.checkpoint()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert feedback(hook(live, workspace=plain)[1])["error"] == "workspace_unavailable"


def test_a_relative_token_file_blocks_as_token_unavailable(live):
    live.checkpoint()
    body = feedback(hook(live, token_file=Path("agent.token"))[1])
    assert body["error"] == "token_unavailable"


def test_an_unreadable_token_file_blocks_as_token_unavailable(live, tmp_path):
    live.checkpoint()
    body = feedback(hook(live, token_file=tmp_path / "no-such.token")[1])
    assert body["error"] == "token_unavailable"


def test_the_codex_hook_answers_decision_block(live):
    status, text = hook(live, harness="codex")
    assert status == 0
    out = json.loads(text)
    assert out["decision"] == "block"
    assert feedback(text, "codex")["next"] == {"operation": "checkpoint"}


@pytest.mark.backend_only(
    "sqlite", reason="compares the SQLite journal file's bytes before and after"
)
def test_the_hook_leaves_the_work_tree_and_the_data_dir_files_as_they_were(live):
    collect(live)
    (live.repo / "README.md").write_text("x = 9\n")
    before_git = git(live.repo, "status", "--porcelain")
    journal = (live.data_dir / "journal.sqlite").read_bytes()
    files = sorted(p.name for p in live.data_dir.iterdir())
    hook(live)
    assert git(live.repo, "status", "--porcelain") == before_git
    assert (live.data_dir / "journal.sqlite").read_bytes() == journal
    assert sorted(p.name for p in live.data_dir.iterdir()) == files


# -- payload and counter ------------------------------------------------------------------------


def test_malformed_stdin_exits_one_without_blocking(live):
    assert hook(live, payload=b"not json") == (1, "")
    assert hook(live, payload=b"[1, 2]") == (1, "")


def test_read_payload_refuses_more_than_the_bound():
    with pytest.raises(ValueError, match="too large"):
        read_payload(io.BytesIO(b" " * (GATE_STDIN_MAX_BYTES + 1)))


def test_an_unreadable_counter_exits_one(live, stop_dir):
    stop_dir.mkdir()
    counter_path("s1", "c1").write_text("garbage")
    assert hook(live) == (1, "")


def test_the_counter_ends_continuation_after_eight_blocks(live):
    for _ in range(STOP_CONTINUATIONS_MAX):
        _, text = hook(live, connect=offline)
        assert "hookSpecificOutput" in text
    status, text = hook(live, connect=offline)
    assert status == 0
    assert "continuations used" in json.loads(text)["systemMessage"]
    assert "hookSpecificOutput" in hook(live, connect=offline)[1]


def test_a_pass_resets_the_counter(live):
    collect(live)
    for _ in range(STOP_CONTINUATIONS_MAX - 1):
        hook(live, connect=offline)
    assert hook(live) == (0, "")
    assert "hookSpecificOutput" in hook(live, connect=offline)[1]


def test_counters_are_per_session_and_change(live):
    hook(live, connect=offline)
    assert read_counter(counter_path("s1", "c1")) == 1
    assert read_counter(counter_path("s2", "c1")) == 0
    assert read_counter(counter_path("s1", "c2")) == 0


def test_write_counter_stores_a_count_and_zero_removes_the_file(stop_dir):
    path = counter_path("s", "c")
    write_counter(path, 3)
    assert read_counter(path) == 3
    write_counter(path, 0)
    assert not path.exists()
    assert read_counter(path) == 0


def test_a_negative_counter_is_unreadable(stop_dir):
    path = counter_path("s", "c")
    stop_dir.mkdir()
    path.write_text("-1")
    with pytest.raises(CounterError):
        read_counter(path)


def test_a_counter_that_cannot_be_written_is_a_counter_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("AGENT_TASK_STOP_DIR", str(blocker / "stop"))
    with pytest.raises(CounterError):
        write_counter(counter_path("s", "c"), 1)


# -- operation_in_progress ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "marker", ["MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG", "rebase-merge"]
)
def test_each_git_operation_in_progress_is_seen(repo, marker):
    assert operation_in_progress(repo) is False
    (repo / ".git" / marker).write_text("")
    assert operation_in_progress(repo) is True


def test_operation_in_progress_outside_a_work_tree_is_storage_unavailable(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(TaskError) as err:
        operation_in_progress(plain)
    assert err.value.code is ErrorCode.STORAGE_UNAVAILABLE


def test_operation_in_progress_reads_a_linked_work_tree_s_own_git_dir(repo, tmp_path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    (repo / ".git" / "MERGE_HEAD").write_text("")
    assert operation_in_progress(linked) is False
    assert operation_in_progress(repo) is True


# -- installing ---------------------------------------------------------------------------------


def test_install_stop_writes_the_hook_and_replaces_only_its_own_entry(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "model": "x",
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "other-hook"}]}]},
            }
        )
    )
    install_hook(settings, "/bin/agent-task task-stop c1 --endpoint A", " task-stop ")
    install_hook(settings, "/bin/agent-task task-stop c1 --endpoint B", " task-stop ")
    data = json.loads(settings.read_text())
    commands = [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"]]
    assert commands == ["other-hook", "/bin/agent-task task-stop c1 --endpoint B"]
    assert data["model"] == "x"
    assert data["hooks"]["Stop"][-1]["hooks"][0]["timeout"] == 60


@pytest.mark.parametrize("text", ["[]", '{"hooks": []}'])
def test_install_hook_refuses_a_settings_file_of_another_shape(tmp_path, text):
    settings = tmp_path / "settings.json"
    settings.write_text(text)
    with pytest.raises(TaskError) as err:
        install_hook(settings, "agent-task task-stop c1", " task-stop ")
    assert err.value.code is ErrorCode.INVALID_VALUE
    assert settings.read_text() == text


def test_the_hook_command_line_refuses_a_relative_token_file(tmp_path):
    with pytest.raises(TaskError) as err:
        hook_command_line(
            "claude-code",
            executable="agent-task",
            change="c1",
            endpoint="http://x",
            repository="acme",
            profile="default",
            token_file=Path("rel.token"),
            workspace=tmp_path,
            data_dir=tmp_path,
        )
    assert err.value.code is ErrorCode.INVALID_PATH


def test_the_hook_command_line_refuses_a_token_file_inside_the_work_tree(tmp_path):
    with pytest.raises(TaskError) as err:
        hook_command_line(
            "claude-code",
            executable="agent-task",
            change="c1",
            endpoint="http://x",
            repository="acme",
            profile="default",
            token_file=tmp_path / "sub" / ".." / "agent.token",
            workspace=tmp_path,
            data_dir=tmp_path / "d",
        )
    assert err.value.code is ErrorCode.INVALID_PATH
    assert "inside the work tree" in err.value.message


def test_install_stop_hook_writes_each_harness_s_command_with_resolved_paths(tmp_path):
    settings = tmp_path / "hooks.json"
    common = dict(
        executable="/usr/bin/agent-task",
        change="c1",
        endpoint="http://x",
        repository="acme",
        profile="default",
        token_file=tmp_path / "my token",
        workspace=tmp_path / "w" / "x" / "..",
        data_dir=tmp_path / "d",
    )
    codex = install_stop_hook(settings, "codex", **common)
    claude = install_stop_hook(settings, "claude-code", **common)
    assert " task-codex-stop c1 " in codex
    assert f"--workspace {(tmp_path / 'w').resolve()} " in codex
    groups = json.loads(settings.read_text())["hooks"]["Stop"]
    assert [g["hooks"][0]["command"] for g in groups] == [codex, claude]
    assert shlex.split(codex)[shlex.split(codex).index("--token-file") + 1] == str(
        tmp_path / "my token"
    )


def test_install_hook_refuses_a_settings_file_that_is_not_json_and_leaves_it(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text("{broken")
    with pytest.raises(TaskError) as err:
        install_hook(settings, "agent-task task-stop c1", " task-stop ")
    assert err.value.code is ErrorCode.MALFORMED_JSON
    assert settings.read_text() == "{broken"
