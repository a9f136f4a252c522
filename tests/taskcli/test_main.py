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
