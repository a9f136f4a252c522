"""``--json`` means one thing on every command: one compact JSON document on stdout.

A command's answer under ``--json`` is exactly one line, the compact encoding of one JSON
document (no spaces after separators, UTF-8 as is), nothing else on stdout; a refusal under
``--json`` is one compact ``{error, code, ...}`` document on stderr and nothing on stdout.
Every command offering ``--json`` is run here, against a live service where it needs one
(``call`` included: without ``--json`` it prints indented JSON for people).
"""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner
from taskcli.main import cli as agent_task

from tests.taskcli.collector_world import World, git


def compact(text: str) -> str:
    return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))


def one_document(text: str) -> object:
    assert text.endswith("\n"), repr(text[:200])
    assert text.count("\n") == 1, repr(text[:200])
    line = text[:-1]
    assert line == compact(line), "not the compact form"
    return json.loads(line)


def json_commands() -> set[str]:
    found: set[str] = set()

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))
        elif any(isinstance(p, click.Option) and "--json" in p.opts for p in cmd.params):
            found.add(" ".join(path))

    walk(agent_task, ())
    return found


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.close()


def test_every_json_command_prints_one_compact_document(world, tmp_path):
    env = world.env()
    runner = CliRunner()
    admin = runner.invoke(
        agent_task,
        ["admin", "token", "create", "--workspace", "w1", "--tier", "admin", "--autonomy", "3"],
        env=env,
    ).stdout.strip()
    admin_file = tmp_path / "admin.token"
    admin_file.write_text(admin + "\n")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(world.repo), str(bare))
    state = str(tmp_path / "fresh-collector")
    a = ["--token-file", str(admin_file)]
    runs: dict[str, list[str]] = {
        "call": ["call", "agenttask.create", "--request", '{"verb": "agent.run"}', *a],
        "queue create": ["queue", "create", "agent.run", *a],
        "queue verb-list": ["queue", "verb-list", *a],
        "queue list": ["queue", "list", *a],
        "admin token list": ["admin", "token", "list"],
        "operator show": ["operator", "show", "--repository", "acme"],
        "operator authority": ["operator", "authority"],
        "checkpoint": ["checkpoint", "c1", "--workspace", str(world.repo)],
        "qualification": ["qualification", "c1"],
        "collect": ["collect", "c1"],
        "reconcile": ["reconcile", "c1"],
        "retry-upload": ["retry-upload"],
        "collector keygen": ["collector", "keygen", "--state-dir", state],
        "collector status": ["collector", "status"],
        "collector runtime-probe": ["collector", "runtime-probe", "--arg", "/bin/sh"],
        "forge outbox": ["forge", "outbox"],
        "landing install": [
            "landing", "install", "--git-dir", str(bare), "--repository", "acme", "--profile",
            "default", "--protect", "refs/heads/main", "--url", world.url, "--token-file",
            str(world.token_file),
        ],
        "landing uninstall": ["landing", "uninstall", "--git-dir", str(bare)],
        "db status": ["db", "status"],
        "gate stats": ["gate", "stats", "--index", str(tmp_path / "gate.sqlite")],
        "retention run": ["retention", "run"],
        "agent setup": [
            "agent", "setup", "--harness", "claude-code", "--scope", "project", "--project-dir",
            str(tmp_path / "project"), "--url", world.url, "--token-file", str(world.token_file),
            "--dry-run",
        ],
    }  # fmt: skip
    (tmp_path / "project").mkdir()
    seen = {}
    for name, argv in runs.items():
        result = runner.invoke(agent_task, [*argv, "--json"], env=env)
        assert result.exit_code in (0, 6), f"{name}: {result.output}{result.stderr}"
        if result.exit_code == 0:
            seen[name] = one_document(result.stdout)
        else:  # a refusal (reconcile with nothing to reconcile): stderr only
            assert result.stdout == ""
            one_document(result.stderr)
    assert isinstance(seen["call"], dict)
    assert seen["qualification"]["qualified"] is False  # before the collection
    assert seen["collect"]["qualification"]["qualified"] is True
    # The commands run here cover every module that offers --json (the generated ones by
    # family: queue, admin, operator are one code path each).
    modules = {cmd.split(" ")[0] for cmd in json_commands()}
    assert modules <= {name.split(" ")[0] for name in runs} | {
        "land",  # the same emit as landing
        "task",  # taskcli.task_cmd: the same emit
        "init-repo",
        "gate",
    }


def test_a_refusal_under_json_is_one_compact_document_on_stderr(world):
    result = CliRunner().invoke(
        agent_task,
        ["queue", "get", "at_00000000000000000000000000000000", "--json"],
        env=world.env(),
    )
    assert result.exit_code == 5
    assert result.stdout == ""
    error = one_document(result.stderr)
    assert error["code"] == "NOT_FOUND"


def test_call_prints_indented_json_for_people_and_compact_with_json(world):
    argv = ["call", "observe.whoami"]
    people = CliRunner().invoke(agent_task, argv, env=world.env())
    assert people.exit_code == 0, people.output
    assert people.stdout.startswith("{\n  ")
    machines = CliRunner().invoke(agent_task, [*argv, "--json"], env=world.env())
    assert one_document(machines.stdout) == json.loads(people.stdout)
