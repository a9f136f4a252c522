"""Every default location on the local machine, and the environment variables that override them.

Nothing here is ever taken from request data. One module answers "where", so the service,
the CLI, the collector, the Stop hooks and the test harness agree:

========================  ==================================  ==========================================
location                  override                            default
========================  ==================================  ==========================================
service data dir          ``AGENT_TASK_DATA_DIR``             the user data dir (below)
user data dir             (``XDG_DATA_HOME`` on Linux)        ``platformdirs.user_data_dir("agent-task")``
done-gate index           ``AGENT_TASK_GATE_INDEX``           ``<user data dir>/gate-index.sqlite``
collector state           ``AGENT_TASK_COLLECTOR_DIR``        ``<user data dir>/collector``
task-stop counters        ``AGENT_TASK_STOP_DIR``             ``<user data dir>/agent-stop``
harness cache (tests)     ``AGENT_TASK_HARNESS_CACHE``        ``platformdirs.user_cache_dir("agent-task")/harness``
Claude Code config        ``CLAUDE_CONFIG_DIR``               ``~/.claude``
Claude Code transcripts   ``AGENT_TASK_CLAUDE_PROJECTS_DIR``  ``<Claude Code config>/projects``
Codex home                ``CODEX_HOME``                      ``~/.codex``
Codex rollouts            ``AGENT_TASK_CODEX_SESSIONS_DIR``   ``<Codex home>/sessions``
dsh session logs          ``AGENT_TASK_DSH_SESSIONS_DIR``     none (dsh is read only when set)
========================  ==================================  ==========================================

A ``~`` in an ``AGENT_TASK_*``, ``CLAUDE_CONFIG_DIR`` or ``CODEX_HOME`` value is expanded.

The user data and cache dirs are platformdirs' answers. On Linux and the BSDs (the XDG
platforms) they are computed here with the standard library, the same way platformdirs does
(``$XDG_DATA_HOME`` / ``$XDG_CACHE_HOME`` when set and not blank, else ``~/.local/share`` /
``~/.cache``; ``tests/taskcore/test_paths.py`` compares both), because importing platformdirs
costs a Stop hook about 25 ms, more than the rest of its fast path; elsewhere (macOS, Windows)
platformdirs itself is asked. This module imports only :mod:`os` and :mod:`sys`, so the hooks'
fast paths (:mod:`taskcore.donegate.light`) use it too.

>>> import os
>>> os.environ["AGENT_TASK_DATA_DIR"] = "/tmp/at-doc"
>>> str(default_data_dir())
'/tmp/at-doc'
>>> del os.environ["AGENT_TASK_DATA_DIR"]
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "APP_NAME",
    "GATE_INDEX_FILENAME",
    "claude_config_dir",
    "claude_projects_dir",
    "codex_home",
    "codex_sessions_dir",
    "collector_state_dir",
    "default_data_dir",
    "default_data_location",
    "dsh_sessions_dir",
    "gate_index_path",
    "harness_cache_dir",
    "stop_counter_dir",
    "stop_counter_location",
    "user_cache_dir",
    "user_data_dir",
    "user_data_root",
]

APP_NAME = "agent-task"
"""The application name platformdirs places the directories under."""

GATE_INDEX_FILENAME = "gate-index.sqlite"
"""The done gate's local index file, under the user data dir."""

_XDG = not sys.platform.startswith(("darwin", "win32", "cygwin", "ios", "android"))


def _env(name: str) -> str | None:
    """The variable's value with ``~`` expanded, or ``None`` when unset or empty."""
    value = os.environ.get(name)
    return os.path.expanduser(value) if value else None


def _xdg(variable: str, fallback: str) -> str:
    value = os.environ.get(variable, "")
    base = value if value.strip() else os.path.expanduser(fallback)
    return os.path.join(base, APP_NAME)


def user_data_dir() -> str:
    """The per-user data dir of agent-task (``platformdirs.user_data_dir``)."""
    if _XDG:
        return _xdg("XDG_DATA_HOME", "~/.local/share")
    import platformdirs  # pragma: no cover - not an XDG platform

    return platformdirs.user_data_dir(APP_NAME, appauthor=False)  # pragma: no cover


def user_cache_dir() -> str:
    """The per-user cache dir of agent-task (``platformdirs.user_cache_dir``)."""
    if _XDG:
        return _xdg("XDG_CACHE_HOME", "~/.cache")
    import platformdirs  # pragma: no cover - not an XDG platform

    return platformdirs.user_cache_dir(APP_NAME, appauthor=False)  # pragma: no cover


def _path(value: str) -> Path:
    from pathlib import Path

    return Path(value)


def user_data_root() -> Path:
    """The user data dir, as a :class:`~pathlib.Path`."""
    return _path(user_data_dir())


def default_data_dir() -> Path:
    """The service data directory: ``$AGENT_TASK_DATA_DIR`` or the user data dir."""
    return _path(default_data_location())


def gate_index_path(override: str | None = None) -> str:
    """The done gate's index: ``override``, ``$AGENT_TASK_GATE_INDEX`` or the default."""
    return (
        override
        or _env("AGENT_TASK_GATE_INDEX")
        or os.path.join(user_data_dir(), GATE_INDEX_FILENAME)
    )


def collector_state_dir() -> Path:
    """The collector's private state: ``$AGENT_TASK_COLLECTOR_DIR`` or ``<user data>/collector``."""
    return _path(_env("AGENT_TASK_COLLECTOR_DIR") or os.path.join(user_data_dir(), "collector"))


def stop_counter_dir() -> Path:
    """The task-stop hooks' counters: ``$AGENT_TASK_STOP_DIR`` or ``<user data>/agent-stop``."""
    return _path(stop_counter_location())


def stop_counter_location() -> str:
    """:func:`stop_counter_dir` as a string (the slim Stop-hook path loads no pathlib)."""
    return _env("AGENT_TASK_STOP_DIR") or os.path.join(user_data_dir(), "agent-stop")


def default_data_location() -> str:
    """:func:`default_data_dir` as a string (the slim Stop-hook path loads no pathlib)."""
    return _env("AGENT_TASK_DATA_DIR") or user_data_dir()


def harness_cache_dir() -> Path:
    """Where the test harnesses are installed: ``$AGENT_TASK_HARNESS_CACHE`` or the cache dir."""
    return _path(_env("AGENT_TASK_HARNESS_CACHE") or os.path.join(user_cache_dir(), "harness"))


def claude_config_dir() -> str:
    """Claude Code's config dir: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    return _env("CLAUDE_CONFIG_DIR") or os.path.expanduser(os.path.join("~", ".claude"))


def claude_projects_dir() -> str:
    """Claude Code's transcripts: ``$AGENT_TASK_CLAUDE_PROJECTS_DIR`` or ``<config>/projects``."""
    return _env("AGENT_TASK_CLAUDE_PROJECTS_DIR") or os.path.join(claude_config_dir(), "projects")


def codex_home() -> str:
    """Codex's home: ``$CODEX_HOME`` or ``~/.codex``."""
    return _env("CODEX_HOME") or os.path.expanduser(os.path.join("~", ".codex"))


def codex_sessions_dir() -> str:
    """Codex's rollouts: ``$AGENT_TASK_CODEX_SESSIONS_DIR`` or ``<Codex home>/sessions``."""
    return _env("AGENT_TASK_CODEX_SESSIONS_DIR") or os.path.join(codex_home(), "sessions")


def dsh_sessions_dir() -> str | None:
    """Dsh's session logs: ``$AGENT_TASK_DSH_SESSIONS_DIR``, else ``None`` (not read)."""
    return _env("AGENT_TASK_DSH_SESSIONS_DIR")
