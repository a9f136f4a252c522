"""``agent-task landing install|uninstall`` and ``agent-task land`` over a live service."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner
from taskcore.actors import Tier
from taskcore.auth import issue_token

from tests.taskcli.collector_world import World, cli, git


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    git(w.repo, "switch", "-q", "-c", "work")
    w.bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(w.repo), str(w.bare)], check=True)
    hook = issue_token(w.service.storage, w.service.clock, workspace="w1", tier=Tier.AGENT)
    w.hook_token = tmp_path / "hook.token"
    w.hook_token.write_text(hook.token + "\n")
    yield w
    w.close()


def invoke(world, *args):
    return CliRunner().invoke(
        cli("collect_cmd", "landing_cmd"), list(args), env=world.env(), catch_exceptions=False
    )


def ok(world, *args):
    result = invoke(world, *args, "--json")
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def install(world, *extra):
    return ok(
        world,
        "landing",
        "install",
        "--git-dir",
        str(world.bare),
        "--repository",
        "acme",
        "--profile",
        "default",
        "--protect",
        "refs/heads/main",
        "--url",
        world.url,
        "--token-file",
        str(world.hook_token),
        *extra,
    )


def push(world):
    return subprocess.run(
        ["git", "-C", str(world.repo), "push", str(world.bare), "HEAD:refs/heads/main"],
        capture_output=True,
        text=True,
        check=False,
    )


def commit(world, text):
    (world.repo / "calc.py").write_text(text)
    git(world.repo, "commit", "-qam", text.strip())
    return git(world.repo, "rev-parse", "HEAD")


def test_install_push_uninstall(world):
    out = install(world)
    assert out["hook"] == str(world.bare / "hooks" / "pre-receive")
    assert out["fail_open"] is False
    commit(world, "x = 2\n")
    refused = push(world)
    assert refused.returncode != 0
    assert "REFUSED: revision_not_checkpointed" in refused.stderr
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    assert ok(world, "collect", "c1")["qualification"]["qualified"] is True
    landed = push(world)
    assert landed.returncode == 0, landed.stderr
    assert "admitted" in landed.stderr
    assert ok(world, "landing", "uninstall", "--git-dir", str(world.bare))["removed"] == out["hook"]
    assert not (world.bare / "hooks" / "pre-receive").exists()


def test_install_refuses_a_foreign_hook_with_the_conflict_status(world):
    (world.bare / "hooks" / "pre-receive").write_text("#!/bin/sh\nexit 0\n")
    result = invoke(
        world,
        "landing",
        "install",
        "--git-dir",
        str(world.bare),
        "--repository",
        "acme",
        "--profile",
        "default",
        "--protect",
        "refs/heads/main",
        "--url",
        world.url,
        "--token-file",
        str(world.hook_token),
    )
    assert result.exit_code == 6
    assert "not written by agent-task" in result.stderr


def test_install_refuses_a_protected_ref_the_profile_cannot_admit(world):
    def attempt(*protect, url=None):
        refs = [x for ref in protect for x in ("--protect", ref)]
        return invoke(
            world,
            "landing",
            "install",
            "--git-dir",
            str(world.bare),
            "--repository",
            "acme",
            "--profile",
            "default",
            *refs,
            "--url",
            url or world.url,
            "--token-file",
            str(world.hook_token),
            "--json",
        )

    refused = attempt("refs/heads/release")
    assert refused.exit_code == 3, refused.stderr
    error = json.loads(refused.stderr)
    assert (error["code"], error["path"]) == ("INVALID_VALUE", "$.protect")
    assert error["details"] == {"target": "refs/heads/main", "refused": ["refs/heads/release"]}
    assert "admits pushes to refs/heads/main only" in error["error"]
    # One bad ref among good ones is refused too, and nothing is written.
    assert attempt("refs/heads/main", "refs/heads/release").exit_code == 3
    assert not (world.bare / "hooks" / "pre-receive").exists()
    # A service the hook cannot reach is found at install, not at the first push.
    down = attempt("refs/heads/main", url="http://127.0.0.1:9")
    assert down.exit_code != 0
    assert json.loads(down.stderr)["code"] == "SERVICE_UNREACHABLE"
    assert not (world.bare / "hooks" / "pre-receive").exists()
    assert attempt("refs/heads/main").exit_code == 0


def test_land_moves_main_only_when_admitted(world):
    main = git(world.repo, "rev-parse", "main")
    commit(world, "x = 3\n")
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    refused = invoke(world, "land", "c1", "--into", "main")
    assert refused.exit_code == 6
    assert "not_qualified" in refused.stderr
    assert "next: collector_claim" in refused.stderr
    assert git(world.repo, "rev-parse", "main") == main
    ok(world, "collect", "c1")
    landed = invoke(world, "land", "c1", "--into", "main")
    assert landed.exit_code == 0, landed.stderr
    assert landed.stdout.startswith("landed Change c1 on refs/heads/main:")
    assert git(world.repo, "rev-parse", "main") == git(world.repo, "rev-parse", "HEAD")
    again = ok(world, "land", "c1", "--into", "main")
    assert again["moved"] is False


def test_land_json_refusal_carries_the_decision(world):
    commit(world, "x = 4\n")
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    result = invoke(world, "land", "c1", "--into", "main", "--json")
    assert result.exit_code == 6
    body = json.loads(result.stderr)
    assert body["code"] == "NOT_ADMITTED"
    assert body["details"]["code"] == "not_qualified"
    assert body["details"]["admitted"] is False


def test_land_needs_a_route(world):
    env = {k: v for k, v in world.env().items() if k != "AGENT_TASK_PROFILE"}
    result = CliRunner().invoke(
        cli("landing_cmd"), ["land", "c1", "--into", "main"], env=env, catch_exceptions=False
    )
    assert result.exit_code == 3
    assert "--profile" in result.stderr


def test_forge_outbox_lists_statuses_and_their_delivery(world, tmp_path):
    from taskcore.evidence.forge import ForgeStatusConfig, apply_forge_settings

    apply_forge_settings(
        world.service.storage,
        world.service.clock,
        workspace="w1",
        repository_id="acme",
        profile_id="default",
        config=ForgeStatusConfig(
            repository_id="acme",
            kind="github",
            api_url="https://api.github.com",
            project="octo/acme",
            token_file=str(tmp_path / "gh.token"),
        ),
    )
    assert ok(world, "forge", "outbox") == []
    commit(world, "x = 5\n")
    ok(world, "checkpoint", "c1", "--workspace", str(world.repo))
    ok(world, "collect", "c1")
    rows = ok(world, "forge", "outbox", "--repository", "acme")
    assert [(r["state"], r["status"]) for r in rows] == [
        ("success", "queued"),
        ("pending", "superseded"),
    ]
    assert rows[0]["context"] == "agent-task/default"
    text = invoke(world, "forge", "outbox").stdout
    assert "agent-task/default success queued" in text
    assert invoke(world, "forge", "outbox", "--limit", "0").exit_code == 3
