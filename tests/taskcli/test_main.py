from taskcli.main import _COMMAND_MODULES, load_commands

from tests.taskcli.frontdoor import agent_task


def test_help_lists_the_front_door_commands_and_the_exit_table():
    result = agent_task("--help")
    assert result.exit_code == 0
    for command in ("serve", "admin", "call", "queue", "task", "mcp"):
        assert f"  {command} " in result.stdout
    assert "Exit status: 0 success" in result.stdout
    assert "8 rate limited, unavailable" in " ".join(result.stdout.split())


def test_every_command_module_registers():
    group = load_commands()
    assert len(group.commands) >= len(_COMMAND_MODULES)
    assert load_commands() is group


def test_unknown_command_is_a_usage_error():
    assert agent_task("no-such-command").exit_code == 2


# -- commands load on use ------------------------------------------------------------------

import importlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import click  # noqa: E402
import pytest  # noqa: E402
from taskcli.main import _COMMANDS  # noqa: E402


def test_the_command_table_names_every_command_its_module_and_its_help():
    defined = {}
    for module in _COMMAND_MODULES:
        group = click.Group()
        importlib.import_module(f"taskcli.{module}").register(group)
        for name, command in group.commands.items():
            text = command.short_help or (command.help or "").partition("\n\n")[0]
            defined[name] = (module, " ".join(text.split()))
    assert {n: (m, " ".join(h.split())) for n, (m, h) in _COMMANDS.items()} == defined


_HEAVY = (
    "taskcore.service",
    "taskcore.codec",
    "attrs",
    "cattrs",
    "httpx",
    "starlette",
    "mcp",
    "orjson",
)


def _imported_by(args, env=None, stdin=b""):
    probe = (
        "import sys; sys.argv = ['agent-task', *sys.argv[1:]]\n"
        "from taskcli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', [m for m in {_HEAVY!r} if m in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    return done.stdout, done.stderr.decode().rsplit("LOADED ", 1)[-1].strip()


@pytest.mark.parametrize("width", ["60", "100", "200"])
def test_help_is_the_same_with_every_command_loaded(width):
    lazy, loaded = _imported_by(["--help"], env={**__import__("os").environ, "COLUMNS": width})
    assert loaded == "[]"
    full = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from taskcli.main import load_commands; sys.argv[0] = 'agent-task';"
            " load_commands()(['--help'], prog_name='agent-task')",
        ],
        capture_output=True,
        env={**__import__("os").environ, "COLUMNS": width},
        timeout=120,
        check=False,
    ).stdout
    assert lazy == full
    assert b"task-codex-stop" in lazy


def test_a_call_over_plain_http_loads_neither_the_service_nor_httpx(tmp_path):
    import os

    from tests.taskcli.frontdoor import RealLive

    live = RealLive(tmp_path)
    try:
        env = {**os.environ, "AGENT_TASK_URL": live.url}
        token = str(live.token_files["admin"])
        out, loaded = _imported_by(
            [
                "call",
                "agenttask.create",
                "--token-file",
                token,
                "--json",
                "--request",
                json.dumps({"verb": "agent.run"}),
            ],
            env=env,
        )
        assert loaded == "[]"
        assert json.loads(out)["taskId"]
    finally:
        live.stop()
