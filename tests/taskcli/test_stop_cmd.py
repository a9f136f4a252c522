from __future__ import annotations

import io
import json
import os

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from taskcli.stop_cmd import (
    MANAGED_BEGIN,
    MANAGED_END,
    install_hook,
    run_hook,
    write_managed_block,
)
from taskcore.auth import revoke_token
from taskcore.clock import SystemClock
from taskcore.limits import STOP_CONTINUATIONS_MAX
from taskhttp.server import BackgroundServer

from tests.taskcli.collector_world import World, cli, git

PAYLOAD = b'{"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false}'


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_STOP_DIR", str(tmp_path / "stop"))
    w = World(tmp_path)
    yield w
    w.close()


def hook(world, harness="claude-code", payload=PAYLOAD, **changes):
    args = dict(
        change="c1",
        endpoint=world.url,
        repository="acme",
        profile="default",
        token_file=world.token_file,
        workspace=world.repo,
        data_dir=world.data,
    )
    args.update(changes)
    return run_hook(harness, stdin=io.BytesIO(payload), **args)


def feedback(text, harness="claude-code"):
    out = json.loads(text)
    body = (
        out["hookSpecificOutput"]["additionalContext"]
        if harness == "claude-code"
        else out["reason"]
    )
    return json.loads(body.split("\n", 1)[1])


def collect(world, change="c1"):
    runner = CliRunner()
    group = cli("collector_cmd", "collect_cmd")
    for args in (["checkpoint", change, "--workspace", str(world.repo)], ["collect", change]):
        result = runner.invoke(group, [*args, "--json"], env=world.env(), catch_exceptions=False)
        assert result.exit_code == 0, result.stderr


def test_a_qualified_clean_workspace_passes_silently(world):
    collect(world)
    assert hook(world) == (0, "")


def test_an_uncollected_subject_blocks_with_next_collector_claim(world):
    CliRunner().invoke(
        cli("collect_cmd"), ["checkpoint", "c1", "--workspace", str(world.repo)], env=world.env()
    )
    status, text = hook(world)
    assert status == 0
    body = feedback(text)
    assert body["next"]["operation"] == "collector_claim"
    assert "agent-task collect" in body["next_action"]


def test_no_subject_at_all_blocks_with_next_checkpoint(world):
    assert feedback(hook(world)[1])["next"] == {"operation": "checkpoint"}


def test_an_uncommitted_edit_blocks_with_next_checkpoint(world):
    collect(world)
    (world.repo / "calc.py").write_text("x = 2\n")
    assert feedback(hook(world)[1])["next"] == {"operation": "checkpoint"}


def test_a_new_uncheckpointed_commit_blocks_with_next_checkpoint(world):
    collect(world)
    (world.repo / "calc.py").write_text("x = 3\n")
    git(world.repo, "commit", "-qam", "more")
    assert feedback(hook(world)[1])["next"] == {"operation": "checkpoint"}


def test_a_revoked_token_blocks_as_token_rejected(world):
    collect(world)
    revoke_token(world.service.storage, SystemClock(), world.token.split("_")[1])
    body = feedback(hook(world)[1])
    assert body["error"] == "token_rejected"


def test_an_offline_service_blocks_as_service_request_failed(world):
    collect(world)
    body = feedback(hook(world, endpoint="http://127.0.0.1:9")[1])
    assert body["error"] == "service_request_failed"
    assert "127.0.0.1" not in json.dumps(body)


def test_a_malformed_answer_blocks_as_malformed_response(world):
    collect(world)

    async def bad(request):
        return JSONResponse(
            {
                "capability": "x",
                "schema_version": 1,
                "operation": "qualification",
                "result": {"qualified": True, "next": {"operation": "rm -rf"}},
            }
        )

    app = Starlette(routes=[Route("/{path:path}", bad, methods=["POST"])])
    with BackgroundServer(app) as url:
        body = feedback(hook(world, endpoint=url)[1])
    assert body["error"] == "malformed_response"
    assert "rm -rf" not in json.dumps(body)


def test_a_missing_data_dir_blocks_and_is_not_created(world, tmp_path):
    missing = tmp_path / "nowhere"
    body = feedback(hook(world, data_dir=missing)[1])
    assert body["error"] == "local_store_unavailable"
    assert not missing.exists()


def test_a_relative_token_file_blocks_as_token_unavailable(world):
    from pathlib import Path

    body = feedback(hook(world, token_file=Path("agent.token"))[1])
    assert body["error"] == "token_unavailable"


def test_malformed_stdin_exits_one_without_blocking(world):
    assert hook(world, payload=b"not json") == (1, "")


def test_an_unreadable_counter_exits_one(world, tmp_path):
    counter_dir = tmp_path / "stop"
    counter_dir.mkdir()
    from taskcli.stop_cmd import _counter_path

    _counter_path("s1", "c1").write_text("garbage")
    assert hook(world) == (1, "")


def test_the_counter_ends_continuation_after_eight_blocks(world):
    for _ in range(STOP_CONTINUATIONS_MAX):
        _, text = hook(world, endpoint="http://127.0.0.1:9")
        assert "hookSpecificOutput" in text
    status, text = hook(world, endpoint="http://127.0.0.1:9")
    assert status == 0
    assert "continuations used" in json.loads(text)["systemMessage"]
    assert "hookSpecificOutput" in hook(world, endpoint="http://127.0.0.1:9")[1]


def test_a_pass_resets_the_counter(world):
    collect(world)
    for _ in range(STOP_CONTINUATIONS_MAX - 1):
        hook(world, endpoint="http://127.0.0.1:9")
    assert hook(world) == (0, "")
    assert "hookSpecificOutput" in hook(world, endpoint="http://127.0.0.1:9")[1]


def test_the_codex_hook_answers_decision_block(world):
    status, text = hook(world, harness="codex")
    assert status == 0
    out = json.loads(text)
    assert out["decision"] == "block"
    assert feedback(text, "codex")["next"] == {"operation": "checkpoint"}


def test_the_hook_leaves_the_work_tree_and_the_data_dir_files_as_they_were(world, tmp_path):
    collect(world)
    (world.repo / "calc.py").write_text("x = 9\n")
    before_git = git(world.repo, "status", "--porcelain")
    journal = (world.data / "journal.sqlite").read_bytes()
    files = sorted(p.name for p in world.data.iterdir())
    hook(world)
    assert git(world.repo, "status", "--porcelain") == before_git
    assert (world.data / "journal.sqlite").read_bytes() == journal
    assert sorted(p.name for p in world.data.iterdir()) == files


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


def test_install_stop_refuses_a_relative_token_file(tmp_path):
    result = CliRunner().invoke(
        cli("stop_cmd"),
        [
            "install-stop",
            "c1",
            "--harness",
            "codex",
            "--settings",
            str(tmp_path / "hooks.json"),
            "--endpoint",
            "http://x",
            "--repository",
            "acme",
            "--profile",
            "default",
            "--token-file",
            "rel.token",
            "--workspace",
            str(tmp_path),
        ],
    )
    assert result.exit_code != 0
    assert not (tmp_path / "hooks.json").exists()


def test_install_stop_writes_a_codex_task_stop_command(tmp_path):
    result = CliRunner().invoke(
        cli("stop_cmd"),
        [
            "install-stop",
            "c1",
            "--harness",
            "codex",
            "--settings",
            str(tmp_path / "hooks.json"),
            "--endpoint",
            "http://x",
            "--repository",
            "acme",
            "--profile",
            "default",
            "--token-file",
            str(tmp_path / "t"),
            "--workspace",
            str(tmp_path),
            "--data-dir",
            str(tmp_path / "d"),
        ],
    )
    assert result.exit_code == 0, result.output
    [group] = json.loads((tmp_path / "hooks.json").read_text())["hooks"]["Stop"]
    assert " task-codex-stop c1 " in group["hooks"][0]["command"]
    assert "instructions" in result.stdout


def test_init_repo_writes_and_replaces_the_managed_block_in_place(tmp_path):
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Project\n\nKeep this.\n")
    assert write_managed_block(agents)
    first = agents.read_text()
    assert first.startswith("# Project\n\nKeep this.\n")
    assert first.count(MANAGED_BEGIN) == 1
    agents.write_text(first.replace("## Workflow tasks", "## Old title") + "\nAfter.\n")
    assert write_managed_block(agents)
    second = agents.read_text()
    assert "## Old title" not in second
    assert second.endswith(MANAGED_END + "\n\nAfter.\n")
    assert not write_managed_block(agents)


def test_init_repo_writes_every_instruction_file(tmp_path):
    result = CliRunner().invoke(cli("stop_cmd"), ["init-repo", "--path", str(tmp_path), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["files"] == {
        "AGENTS.md": True,
        ".cursor/rules/agent-task.mdc": True,
        ".github/copilot-instructions.md": True,
    }
    assert (tmp_path / ".cursor/rules/agent-task.mdc").read_text().startswith("---\n")
    again = CliRunner().invoke(cli("stop_cmd"), ["init-repo", "--path", str(tmp_path), "--json"])
    assert set(json.loads(again.stdout)["files"].values()) == {False}
    assert os.path.exists(tmp_path / "AGENTS.md")


def test_an_operation_in_progress_is_not_clean(world):
    collect(world)
    git_dir = world.repo / ".git"
    (git_dir / "MERGE_HEAD").write_text(git(world.repo, "rev-parse", "HEAD") + "\n")
    assert feedback(hook(world)[1])["next"] == {"operation": "checkpoint"}
    (git_dir / "MERGE_HEAD").unlink()
    assert hook(world) == (0, "")
