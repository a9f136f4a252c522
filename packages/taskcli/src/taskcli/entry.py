"""The ``agent-task`` script: the Stop hooks first, everything else through click.

The Stop hooks run at every agent stop, so they must start fast: they are dispatched here,
before click and any command module is imported. ``agent-task gate-stop`` goes to
:mod:`taskcli.gate_stop` (the fast path through :mod:`taskcore.donegate.quickhook`, which
hands over to the full hook when it cannot answer from the index); ``task-stop`` and
``task-codex-stop`` go to :mod:`taskcli.task_stop` (the slim pass path, which hands over to
the full hook for anything but a pass); ``session-start`` goes to :mod:`taskcli.session_start`
(the SessionStart hook: one plain HTTP call), and ``agent headers`` (the MCP headers helper the
harness runs before it connects) to :mod:`taskcli.agent_headers`. Every other command goes to
:func:`taskcli.main.main`.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``agent-task`` script."""
    if sys.argv[1:2] == ["gate-stop"]:
        from taskcli.gate_stop import main as gate_stop

        sys.exit(gate_stop(sys.argv[2:]))
    if sys.argv[1:2] in (["task-stop"], ["task-codex-stop"]):
        import os

        from taskcli.task_stop import main as task_stop

        status = task_stop(sys.argv[1], sys.argv[2:])  # returns only after a slim pass
        sys.stdout.flush()
        # A pass printed nothing and holds nothing open: skip the interpreter's teardown
        # (about 2 ms of a hook that must finish within a few times an empty start-up).
        os._exit(status)
    if sys.argv[1:2] == ["session-start"]:
        import os

        from taskcli.session_start import main as session_start

        status = session_start(sys.argv[2:])
        sys.stdout.flush()
        os._exit(status)  # nothing is held open: skip the interpreter's teardown
    if sys.argv[1:3] == ["agent", "headers"]:
        from taskcli.agent_headers import main as agent_headers

        sys.exit(agent_headers(sys.argv[3:]))
    from taskcli.main import main as cli_main

    cli_main()
