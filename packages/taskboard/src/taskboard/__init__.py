"""The operator board: server-rendered pages (Starlette + Jinja2) over the taskcore registry.

``agent-task serve`` mounts :func:`create_board` at ``/board``. The board is an adapter: it
calls registry operations with the signed-in token and renders what they return.
"""

from taskboard.app import BOARD_PATH, CSP, create_board
from taskboard.sessions import Session, SessionStore

__all__ = ["BOARD_PATH", "CSP", "Session", "SessionStore", "create_board"]
