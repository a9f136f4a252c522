"""The operator board: server-rendered pages (Starlette + Jinja2) over the taskcore registry.

``agent-task serve`` mounts :func:`create_board` at ``/board``. The board is an adapter: it
calls registry operations with the signed-in token and renders what they return.
"""

from taskcore.lazy import installed_version

from taskboard.app import BOARD_PATH, CSP, create_board
from taskboard.sessions import Session, SessionStore

__all__ = ["BOARD_PATH", "CSP", "Session", "SessionStore", "create_board"]


def __getattr__(name: str) -> str:
    """``__version__``: the installed agenttask-board's (the repository's VERSION), read on first use."""
    if name == "__version__":
        return installed_version("agenttask-board")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
