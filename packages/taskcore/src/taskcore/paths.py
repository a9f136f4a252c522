"""Default locations on the local machine (never taken from request data).

``AGENT_TASK_DATA_DIR`` overrides the service data directory; otherwise it is
``$XDG_DATA_HOME/agent-task`` (``~/.local/share/agent-task``). The done-gate index and the
collector's private state live under the same user data directory unless overridden.

>>> import os
>>> os.environ["AGENT_TASK_DATA_DIR"] = "/tmp/at-doc"
>>> str(default_data_dir())
'/tmp/at-doc'
>>> del os.environ["AGENT_TASK_DATA_DIR"]
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_data_dir", "user_data_root"]


def user_data_root() -> Path:
    """Return ``$XDG_DATA_HOME/agent-task`` or ``~/.local/share/agent-task``."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "agent-task"


def default_data_dir() -> Path:
    """Return the service data directory: ``$AGENT_TASK_DATA_DIR`` or the user data root."""
    override = os.environ.get("AGENT_TASK_DATA_DIR")
    return Path(override) if override else user_data_root()
