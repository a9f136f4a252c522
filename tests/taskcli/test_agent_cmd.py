"""``agent-task agent setup|doctor|headers`` and ``session-start`` against a live service.

``setup`` and ``doctor`` run in process (click's runner, with ``HOME`` and ``PATH`` of the
test); ``headers`` and ``session-start``, which the ``agent-task`` script dispatches before
click, run as the real executable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.taskcli.frontdoor import RealLive, agent_setup, agent_task, agent_world

AGENT_TASK = str(Path(sys.executable).parent / "agent-task")


@pytest.fixture(scope="module", autouse=True)
def _both_backends(module_backend: str) -> str:
    """The service lives for the module, and so does its backend."""
    return module_backend


@pytest.fixture(scope="module")
def live(tmp_path_factory, _both_backends):
    server = RealLive(tmp_path_factory.mktemp("agent"))
    yield server
    server.stop()


@pytest.fixture
def world(tmp_path: Path):
    return agent_world(tmp_path)


def _setup(live: RealLive, world, *extra: str, harness: str = "claude-code", scope: str = "user"):
    token = str(live.token_files["agent"])
    return agent_setup(live, world, "--token-file", token, *extra, harness=harness, scope=scope)


def test_dry_run_prints_the_diff_and_writes_nothing(live, world):
    _, project, _ = world
    result = _setup(live, world, "--dry-run", harness="codex", scope="project")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("--- /dev/null\n+++ b")
    assert f'+url = "{live.url}/mcp"' in result.stdout
    assert not (project / ".codex").exists()


def test_setup_writes_then_changes_nothing_then_remove_takes_it_out(live, world):
    home, _, env = world
    (home / ".claude").mkdir()
    theirs = '{\n  "model": "opus",\n  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}\n}\n'
    (home / ".claude" / "settings.json").write_text(theirs)
    first = _setup(live, world)
    assert first.exit_code == 0, first.stderr
    assert f"wrote {home / '.claude.json'} (the MCP server entry 'agent-task')" in first.stdout
    assert f"updated {home / '.claude' / 'settings.json'}" in first.stdout
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus"
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"
    snapshot = {p: p.read_text() for p in home.rglob("*") if p.is_file()}
    second = _setup(live, world)
    assert second.stdout.startswith("nothing to change")
    assert {p: p.read_text() for p in home.rglob("*") if p.is_file()} == snapshot
    removed = agent_task(
        "agent", "setup", "--harness", "claude-code", "--scope", "user", "--remove", env=env
    )
    assert removed.exit_code == 0, removed.stderr
    assert json.loads((home / ".claude" / "settings.json").read_text()) == json.loads(theirs)
    assert "mcpServers" not in json.loads((home / ".claude.json").read_text())


def test_setup_refuses_without_url_or_token_file_and_a_token_file_in_the_tree(live, world):
    _, project, env = world
    no_url = agent_task("agent", "setup", "--harness", "codex", "--scope", "user", env=env)
    assert no_url.exit_code == 3
    assert "--url is required" in no_url.stderr
    inside = project / "agent.token"
    inside.write_text("x\n")
    refused = agent_task(
        "agent",
        "setup",
        "--harness",
        "codex",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        "--url",
        live.url,
        "--token-file",
        str(inside),
        env=env,
    )
    assert refused.exit_code == 3
    assert "INVALID_PATH" in refused.stderr
    assert not (project / ".codex").exists()


def test_setup_json_names_the_files_and_the_notes(live, world):
    result = _setup(live, world, "--json", harness="codex", scope="project")
    out = json.loads(result.stdout)
    assert [c["purpose"] for c in out["changed"]] == [
        "the MCP server entry 'agent-task'",
        "the hooks: SessionStart, Stop, SubagentStop",
    ]
    assert out["dry_run"] is False
    assert any("/hooks" in note for note in out["notes"])


def test_doctor_passes_a_good_setup_and_exits_9_with_the_fix_for_a_broken_one(live, world):
    _, project, env = world
    assert _setup(live, world).exit_code == 0
    good = agent_task(
        "agent",
        "doctor",
        "--harness",
        "claude-code",
        "--project-dir",
        str(project),
        "--json",
        env=env,
    )
    report = json.loads(good.stdout)
    assert good.exit_code == 0, report
    assert report["ok"] is True
    by_name = {c["name"]: c for c in report["checks"]}
    assert by_name["token"]["detail"].startswith("agent token 'agent'")
    assert by_name["leases"]["detail"] == "agenttask.leases answers: 0 held"
    bad = agent_task(
        "agent",
        "doctor",
        "--harness",
        "claude-code",
        "--project-dir",
        str(project),
        "--url",
        "http://127.0.0.1:9",
        env=env,
    )
    assert bad.exit_code == 9
    assert "  fail  service" in bad.stdout
    assert "fix: start it ('agent-task serve')" in bad.stdout


def _run(args: list[str], *, stdin: bytes = b"{}", env: dict[str, str] | None = None):
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_TASK_")}
    return subprocess.run(
        [AGENT_TASK, *args],
        input=stdin,
        capture_output=True,
        env={**base, **(env or {})},
        check=False,
    )


def test_headers_prints_the_bearer_of_the_token_file_and_fails_without_one(live, tmp_path):
    done = _run(["agent", "headers", "--token-file", str(live.token_files["agent"])])
    assert done.returncode == 0
    token = live.token_files["agent"].read_text().strip()
    assert json.loads(done.stdout) == {"Authorization": f"Bearer {token}"}
    from_env = _run(["agent", "headers"], env={"AGENT_TASK_TOKEN": "abc"})
    assert json.loads(from_env.stdout) == {"Authorization": "Bearer abc"}
    missing = _run(["agent", "headers", "--token-file", str(tmp_path / "none")])
    assert missing.returncode == 4
    assert missing.stdout == b""
    assert b"cannot read a token" in missing.stderr
    assert _run(["agent", "headers", "--bogus"]).returncode == 2


def test_session_start_is_silent_with_nothing_held_and_tells_a_held_lease(live):
    args = ["session-start", "--harness", "codex", *live.args("agent")]
    quiet = _run(args, stdin=b'{"source": "startup"}')
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, b"", b"")
    created = agent_task(
        "call",
        "agenttask.create",
        "--json",
        "--request",
        '{"verb": "agent.run", "payload": {"goal": "ship it"}}',
        *live.args("member"),
    )
    task_id = json.loads(created.stdout)["taskId"]
    claimed = agent_task(
        "call",
        "agenttask.claim",
        "--json",
        "--request",
        json.dumps({"taskId": task_id}),
        *live.args("agent"),
    )
    fence = json.loads(claimed.stdout)["lease"]["fence"]
    told = _run(args, stdin=b'{"source": "compact"}')
    assert told.returncode == 0
    out = json.loads(told.stdout)
    text = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "(this session was compacted)" in text
    assert f'agenttask_checkpoint {{"taskId": "{task_id}", "fence": {fence}}}' in text
    assert 'goal (from its payload): "ship it"' in text
    agent_task(
        "call",
        "agenttask.checkpoint",
        "--request",
        json.dumps({"taskId": task_id, "fence": fence, "status": "DONE"}),
        *live.args("agent"),
    )
    assert _run(args).stdout == b""


@pytest.mark.parametrize(
    ("args", "env", "why"),
    [
        (
            ["--url", "http://127.0.0.1:9", "--token-file", "TOKEN"],
            {},
            "did not answer (ConnectError)",
        ),
        (["--url", "URL", "--token-file", "/nonexistent"], {}, "token file cannot be read"),
        (["--url", "URL"], {}, "no token"),
        (["--token-file", "TOKEN"], {}, "no service URL"),
        (
            ["--url", "URL"],
            {"AGENT_TASK_TOKEN": "wrong"},
            "refused the leases read (UNAUTHENTICATED)",
        ),
        (["--harness", "vim"], {}, "command line is wrong"),
    ],
)
def test_session_start_says_one_line_and_exits_0_when_it_cannot_tell(live, args, env, why):
    argv = [
        a.replace("URL", live.url).replace("TOKEN", str(live.token_files["agent"])) for a in args
    ]
    done = _run(["session-start", *argv], env=env)
    assert done.returncode == 0
    [line] = done.stdout.decode().splitlines()
    message = json.loads(line)["systemMessage"]
    assert why in message
    assert message.endswith("the leases this agent holds are unknown")


def test_session_start_reads_url_and_token_from_the_environment(live):
    done = _run(
        ["session-start"],
        env={"AGENT_TASK_URL": live.url, "AGENT_TASK_TOKEN_FILE": str(live.token_files["agent"])},
    )
    assert (done.returncode, done.stdout) == (0, b"")


def test_session_start_help_is_its_usage():
    done = _run(["session-start", "--help"])
    assert done.stdout.decode().startswith("usage: agent-task session-start")
