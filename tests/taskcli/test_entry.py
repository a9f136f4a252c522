"""The agent-task script: the Stop hooks before click, everything else through the click group."""

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


def test_task_stop_goes_to_its_slim_path_and_hands_over_to_the_full_hook():
    plain = ["c1", "--endpoint", "http://127.0.0.1:9", "--repository", "r", "--profile", "p"]
    plain += ["--token-file", "/nonexistent/t", "--workspace", "/nonexistent/w"]
    done = _run("task-stop", *plain, stdin=b"not json")
    # the full hook's answer to an unreadable payload (exit status 1, caught by the probe)
    assert b"unreadable Stop payload or counter\nCLICK True" in done.stderr
    assert _run("task-codex-stop", "--help").stdout.startswith(b"Usage:")
