from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from taskcore.auth import revoke_token
from taskcore.clock import SystemClock
from taskcore.limits import STOP_CONTINUATIONS_MAX
from taskhttp.server import BackgroundServer

from tests.taskcli.collector_world import World, cli

PAYLOAD = b'{"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false}'


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_TASK_STOP_DIR", str(tmp_path / "stop"))
    w = World(tmp_path)
    yield w
    w.close()


def run_command(world, harness="claude-code", payload=PAYLOAD, **changes):
    """Run ``agent-task task-stop`` (or ``task-codex-stop``) with ``payload`` on stdin."""
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
    argv = [
        "task-codex-stop" if harness == "codex" else "task-stop",
        args.pop("change"),
        *(f"--{name.replace('_', '-')}={value}" for name, value in args.items()),
    ]
    return CliRunner().invoke(cli("stop_cmd"), argv, input=payload)


def hook(world, harness="claude-code", payload=PAYLOAD, **changes):
    """The hook command's exit status and stdout (without echo's newline)."""
    result = run_command(world, harness, payload, **changes)
    return result.exit_code, result.stdout.removesuffix("\n")


def feedback(text, harness="claude-code"):
    out = json.loads(text)
    body = (
        out["hookSpecificOutput"]["additionalContext"]
        if harness == "claude-code"
        else out["reason"]
    )
    return json.loads(body.rsplit("\n", 1)[1])


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


@pytest.mark.backend_only(
    "sqlite", reason="a missing data dir means a missing journal only on SQLite"
)
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
    result = run_command(world, payload=b"not json")
    assert result.stderr == "agent-task task-stop: unreadable Stop payload or counter\n"


def test_the_counter_ends_continuation_after_eight_blocks(world):
    for _ in range(STOP_CONTINUATIONS_MAX):
        _, text = hook(world, endpoint="http://127.0.0.1:9")
        assert "hookSpecificOutput" in text
    status, text = hook(world, endpoint="http://127.0.0.1:9")
    assert status == 0
    assert "continuations used" in json.loads(text)["systemMessage"]
    assert "hookSpecificOutput" in hook(world, endpoint="http://127.0.0.1:9")[1]


def test_the_codex_hook_answers_decision_block(world):
    status, text = hook(world, harness="codex")
    assert status == 0
    out = json.loads(text)
    assert out["decision"] == "block"
    assert feedback(text, "codex")["next"] == {"operation": "checkpoint"}


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
            str(tmp_path / "work"),
            "--data-dir",
            str(tmp_path / "d"),
        ],
    )
    assert result.exit_code == 0, result.output
    [group] = json.loads((tmp_path / "hooks.json").read_text())["hooks"]["Stop"]
    assert " task-codex-stop c1 " in group["hooks"][0]["command"]
    assert "instructions" in result.stdout
    assert "nothing to commit" in result.stdout
    assert "trust it in /hooks" in result.stdout


def _install(tmp_path, work, token, settings):
    return CliRunner().invoke(
        cli("stop_cmd"),
        [
            "install-stop",
            "c1",
            "--harness",
            "claude-code",
            "--settings",
            str(settings),
            "--endpoint",
            "http://x",
            "--repository",
            "acme",
            "--profile",
            "default",
            "--token-file",
            str(token),
            "--workspace",
            str(work),
        ],
    )


def test_install_stop_refuses_a_token_file_inside_the_work_tree(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    result = _install(tmp_path, work, work / "agent.token", work / ".claude" / "settings.json")
    assert result.exit_code == 3
    assert "inside the work tree" in result.stderr
    assert not (work / ".claude").exists()


def test_install_stop_says_to_commit_a_settings_file_inside_the_work_tree(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    result = _install(tmp_path, work, tmp_path / "agent.token", work / ".claude" / "settings.json")
    assert result.exit_code == 0, result.output
    assert "commit .claude/settings.json" in result.stdout
    assert "2.1.181" in result.stdout


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
