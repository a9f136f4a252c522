"""The agent-task script: gate-stop before click, everything else through the click group."""

import subprocess
import sys

PROBE = (
    "import sys; sys.argv = ['agent-task', *sys.argv[1:]]\n"
    "from taskcli.entry import main\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "print('CLICK', 'click' in sys.modules, file=sys.stderr)"
)


def _run(*args, stdin=b""):
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_gate_stop_runs_without_click():
    done = _run("gate-stop", "--harness", "codex", stdin=b"{}")
    assert b"CLICK False" in done.stderr
    assert b"done gate:" in done.stdout  # {} names no transcript: the stop is allowed


def test_other_commands_go_to_click():
    done = _run("--version")
    assert b"CLICK True" in done.stderr
    assert b"version" in done.stdout
