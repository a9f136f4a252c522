"""``agent setup``'s plan: what each harness gets, idempotence, other settings kept, no secret."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from taskcore.agentsetup.harness import (
    OAuthGrant,
    SetupOptions,
    TaskStopHook,
    TokenFile,
    hooks_path,
    mcp_path,
)
from taskcore.agentsetup.plan import Plan, plan_remove, plan_setup
from taskcore.errors import ErrorCode, TaskError

EXE = "/opt/at/bin/agent-task"
URL = "http://127.0.0.1:8787"
SECRET = "tok-9f8e7d6c5b4a"


class Disk:
    """Files in memory: the reader the plan gets, and where a test applies a plan."""

    def __init__(self) -> None:
        self.files: dict[Path, str] = {}

    def read(self, path: Path) -> str | None:
        return self.files.get(path)

    def apply(self, plan: Plan) -> None:
        for f in plan.changed:
            if f.after is None:
                self.files.pop(f.path, None)
            else:
                self.files[f.path] = f.after


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(key, raising=False)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    return project, tmp_path / "secrets" / "agent.token"


def options(world: tuple[Path, Path], harness: str, scope: str, **extra: object) -> SetupOptions:
    project, token = world
    return SetupOptions(
        harness=harness,
        scope=scope,
        url=URL + "/",
        credential=TokenFile(token),
        project_dir=project,
        executable=EXE,
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
@pytest.mark.parametrize("scope", ["project", "user"])
def test_setup_writes_the_entry_and_three_hooks_and_a_second_run_changes_nothing(
    world, harness, scope
):
    disk = Disk()
    opts = options(world, harness, scope)
    plan = plan_setup(opts, disk.read, secret=SECRET)
    assert {f.path for f in plan.changed} == {
        mcp_path(harness, scope, world[0]),
        hooks_path(harness, scope, world[0]),
    }
    assert all(f.in_work_tree == (scope == "project") for f in plan.files)
    disk.apply(plan)
    assert plan_setup(opts, disk.read, secret=SECRET).changed == ()
    hooks = json.loads(disk.files[hooks_path(harness, scope, world[0])])["hooks"]
    commands = {
        event: [h["command"] for g in groups for h in g["hooks"]] for event, groups in hooks.items()
    }
    assert commands == {
        "Stop": [f"{EXE} gate-stop --harness {harness}"],
        "SubagentStop": [f"{EXE} gate-stop --harness {harness} --subagent"],
        "SessionStart": [
            f"{EXE} session-start --harness {harness} --url {URL} --token-file {world[1]}"
        ],
    }
    entry_text = disk.files[mcp_path(harness, scope, world[0])]
    if harness == "claude-code":
        entry = json.loads(entry_text)["mcpServers"]["agent-task"]
        assert entry == {
            "type": "http",
            "url": URL + "/mcp",
            "headersHelper": f"{EXE} agent headers --token-file {world[1]}",
        }
    else:
        entry = tomllib.loads(entry_text)["mcp_servers"]["agent-task"]
        assert entry == {
            "url": URL + "/mcp",
            "http_headers_helper": f"{EXE} agent headers --token-file {world[1]}",
        }
    for text in disk.files.values():
        assert SECRET not in text


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_remove_gives_back_the_users_files_byte_for_byte(world, harness):
    disk = Disk()
    project = world[0]
    theirs = {
        mcp_path(harness, "project", project): (
            '{\n    "mcpServers": {\n        "docs": {"type": "http", "url": "https://d/mcp"}\n    }\n}\n'
            if harness == "claude-code"
            else '# mine\nmodel = "o3"\n\n[mcp_servers.docs]\nurl = "https://d/mcp"\n'
        ),
        hooks_path(harness, "project", project): json.dumps(
            {
                "permissions": {"allow": ["Bash(ls)"]},
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
                },
            },
            indent=4,
        )
        + "\n",
    }
    disk.files.update(theirs)
    opts = options(world, harness, "project")
    disk.apply(plan_setup(opts, disk.read, secret=SECRET))
    # What was theirs is still there.
    hooks = json.loads(disk.files[hooks_path(harness, "project", project)])
    assert hooks["permissions"] == {"allow": ["Bash(ls)"]}
    assert hooks["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-send done"
    assert len(hooks["hooks"]["Stop"]) == 2
    disk.apply(plan_remove(opts, disk.read))
    if harness == "claude-code":
        # JSON is re-serialized with the file's own indentation: same object, same layout.
        assert json.loads(disk.files[mcp_path(harness, "project", project)]) == json.loads(
            theirs[mcp_path(harness, "project", project)]
        )
    else:
        assert (
            disk.files[mcp_path(harness, "project", project)]
            == theirs[mcp_path(harness, "project", project)]
        )
    assert (
        disk.files[hooks_path(harness, "project", project)]
        == theirs[hooks_path(harness, "project", project)]
    )


def test_remove_of_files_setup_created_removes_them(world):
    disk = Disk()
    opts = options(world, "codex", "project")
    disk.apply(plan_setup(opts, disk.read))
    disk.apply(plan_remove(opts, disk.read))
    assert disk.files == {}
    assert plan_remove(opts, disk.read).changed == ()


def test_a_new_url_or_token_file_updates_our_entries_in_place(world):
    disk = Disk()
    disk.apply(plan_setup(options(world, "codex", "user"), disk.read))
    moved = SetupOptions(
        harness="codex",
        scope="user",
        url="https://tasks.example",
        credential=TokenFile(world[1].parent / "other.token"),
        project_dir=world[0],
        executable=EXE,
    )
    plan = plan_setup(moved, disk.read)
    diff = plan.diff()
    assert '-url = "http://127.0.0.1:8787/mcp"' in diff
    assert '+url = "https://tasks.example/mcp"' in diff
    disk.apply(plan)
    hooks = json.loads(disk.files[hooks_path("codex", "user", world[0])])["hooks"]
    assert [len(groups) for groups in hooks.values()] == [1, 1, 1]


def test_the_token_file_inside_the_work_tree_is_refused(world):
    project, _ = world
    opts = SetupOptions(
        harness="claude-code",
        scope="user",
        url=URL,
        credential=TokenFile(project / "sub" / "agent.token"),
        project_dir=project / "sub",
        executable=EXE,
    )
    with pytest.raises(TaskError) as info:
        plan_setup(opts, Disk().read)
    assert info.value.code is ErrorCode.INVALID_PATH


def test_the_token_itself_never_lands_in_a_file(world):
    # A token that happens to be spelled like a path the entry holds is caught, not written.
    with pytest.raises(TaskError, match="the token would be written"):
        plan_setup(options(world, "codex", "project"), Disk().read, secret="agent headers")


def test_setup_without_a_change_keeps_an_installed_task_stop_hook_and_remove_takes_it(world):
    disk = Disk()
    project = world[0]
    opts = options(
        world,
        "claude-code",
        "project",
        task_stop=TaskStopHook(
            change="main-work", repository="calc", profile="default", data_dir=Path("/srv/at")
        ),
    )
    disk.apply(plan_setup(opts, disk.read))
    stops = json.loads(disk.files[hooks_path("claude-code", "project", project)])["hooks"]["Stop"]
    task_stop = stops[1]["hooks"][0]
    assert task_stop["command"].startswith(f"{EXE} task-stop main-work --endpoint {URL} ")
    assert task_stop["timeout"] == 60
    assert plan_setup(options(world, "claude-code", "project"), disk.read).changed == ()
    disk.apply(plan_remove(opts, disk.read))
    assert hooks_path("claude-code", "project", project) not in disk.files


def test_the_dry_run_diff_is_a_unified_diff_of_each_file(world):
    plan = plan_setup(options(world, "claude-code", "project"), Disk().read)
    diff = plan.diff()
    assert diff.startswith("--- /dev/null\n+++ b")
    assert diff.count("--- /dev/null") == 2
    assert f'+      "url": "{URL}/mcp",' in diff


def test_notes_say_what_to_commit_and_what_the_harness_asks(world):
    plan = plan_setup(options(world, "codex", "project"), Disk().read)
    text = "\n".join(plan.notes)
    assert "commit .codex/config.toml, .codex/hooks.json" in text
    assert "/hooks" in text
    assert "trusted project" in text
    user = plan_setup(options(world, "claude-code", "user"), Disk().read)
    assert not any(n.startswith("commit") for n in user.notes)


@pytest.mark.parametrize("url", ["ftp://h", "127.0.0.1:8787", "http://", "http://h/?x=1"])
def test_a_url_that_is_not_http_is_refused(world, url):
    project, token = world
    with pytest.raises(TaskError) as info:
        plan_setup(
            SetupOptions(
                harness="codex",
                scope="user",
                url=url,
                credential=TokenFile(token),
                project_dir=project,
                executable=EXE,
            ),
            Disk().read,
        )
    assert info.value.code is ErrorCode.INVALID_VALUE


def test_a_settings_file_that_is_not_json_stops_the_plan_before_anything(world):
    disk = Disk()
    disk.files[hooks_path("claude-code", "project", world[0])] = "{ broken"
    with pytest.raises(TaskError, match="not valid JSON"):
        plan_setup(options(world, "claude-code", "project"), disk.read)


def _oauth(world: tuple[Path, Path], harness: str, scope: str, **extra: object) -> SetupOptions:
    project, token = world
    return SetupOptions(
        harness=harness,
        scope=scope,
        url=URL,
        credential=OAuthGrant(token.parent / "grant.json", **extra),  # type: ignore[arg-type]
        project_dir=project,
        executable=EXE,
    )


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_oauth_switching_from_a_token_file_replaces_the_helper_and_the_hooks_credential(
    world, harness
):
    disk = Disk()
    disk.apply(plan_setup(options(world, harness, "user"), disk.read, secret=SECRET))
    switched = plan_setup(_oauth(world, harness, "user"), disk.read, secret="atr_refresh")
    disk.apply(switched)
    text = "".join(disk.files.values())
    assert "agent headers" not in text
    assert "--token-file" not in text
    assert f"--grant-file {world[1].parent / 'grant.json'}" in text
    assert plan_setup(_oauth(world, harness, "user"), disk.read).changed == ()
    shared = plan_setup(_oauth(world, harness, "user", share=True), disk.read)
    disk.apply(shared)
    helper = f"{EXE} agent headers --grant-file {world[1].parent / 'grant.json'}"
    assert helper in disk.files[mcp_path(harness, "user", world[0])]
    disk.apply(plan_remove(_oauth(world, harness, "user"), disk.read))
    assert "agent-task" not in "".join(disk.files.values())


def test_oauth_refuses_a_grant_file_in_the_work_tree_and_a_task_stop_hook(world):
    project, _ = world
    inside = SetupOptions(
        harness="codex",
        scope="project",
        url=URL,
        credential=OAuthGrant(project / "grant.json"),
        project_dir=project,
        executable=EXE,
    )
    with pytest.raises(TaskError) as refused:
        plan_setup(inside, Disk().read)
    assert refused.value.code is ErrorCode.INVALID_PATH
    assert "--grant-file is inside the work tree" in refused.value.message
    with pytest.raises(TaskError, match="task-stop hook reads a token file"):
        SetupOptions(
            harness="codex",
            scope="user",
            url=URL,
            credential=OAuthGrant(Path("/g.json")),
            project_dir=project,
            executable=EXE,
            task_stop=TaskStopHook(change="c", repository="r", profile="p", data_dir=Path("/d")),
        )
