"""The ``agent-task`` script: the done gate's Stop hook first, everything else through click.

The Stop hook runs at every agent stop, so ``agent-task gate-stop`` must start fast: it is
dispatched here, before click and any command module is imported, to
:mod:`taskcli.gate_stop` (the fast path through :mod:`taskcore.donegate.quickhook`, which
hands over to the full hook when it cannot answer from the index). Every other command goes to :func:`taskcli.main.main`.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``agent-task`` script."""
    if sys.argv[1:2] == ["gate-stop"]:
        from taskcli.gate_stop import main as gate_stop

        sys.exit(gate_stop(sys.argv[2:]))
    from taskcli.main import main as cli_main

    cli_main()
