r"""Where the gate looks: transcript roots, the index file, and the remote path check.

Roots (each overridable, for tests and unusual set-ups):

* Claude Code: ``$AGENT_TASK_CLAUDE_PROJECTS_DIR``, else ``$CLAUDE_CONFIG_DIR/projects``,
  else ``~/.claude/projects``;
* Codex: ``$AGENT_TASK_CODEX_SESSIONS_DIR``, else ``$CODEX_HOME/sessions``, else
  ``~/.codex/sessions``;
* dsh: ``$AGENT_TASK_DSH_SESSIONS_DIR`` only (the root of dsh's JSONL persistence plugin is
  required in its own configuration and has no default, so the gate has none either);
* the index: ``$AGENT_TASK_GATE_INDEX``, else ``user_data_root() / "gate-index.sqlite"``.

A transcript path that arrives from a remote caller goes through :func:`checked_transcript`:
after resolving symlinks it must be a regular ``.jsonl`` file inside one of the roots (or a
``.jsonl.zstd`` file inside the dsh root).

>>> import os, tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> os.environ["AGENT_TASK_CLAUDE_PROJECTS_DIR"] = str(root)
>>> (root / "p").mkdir(); _ = (root / "p" / "s.jsonl").write_text("{}\n")
>>> checked_transcript(str(root / "p" / "s.jsonl"), GateConfig.from_env()).name
's.jsonl'
>>> checked_transcript("/etc/passwd", GateConfig.from_env())
Traceback (most recent call last):
taskcore.errors.TaskError: transcript_path must be a .jsonl file under the Claude Code or Codex session roots of this machine at $.transcript_path
>>> del os.environ["AGENT_TASK_CLAUDE_PROJECTS_DIR"]
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

import attrs

from taskcore.errors import ErrorCode, TaskError
from taskcore.paths import user_data_root

__all__ = [
    "ADAPTERS",
    "CLAUDE_CODE",
    "CODEX",
    "DSH",
    "HARNESSES",
    "GateConfig",
    "checked_transcript",
    "harness_of",
    "repository_of",
]

CLAUDE_CODE = "claude-code"
CODEX = "codex"
DSH = "dsh"
HARNESSES = (CLAUDE_CODE, CODEX)
"""The harnesses whose Stop hook output the gate speaks (``--harness`` of the hook and the
installer). dsh runs Codex hooks through its compatibility layer, so it uses ``codex``."""
ADAPTERS = (CLAUDE_CODE, CODEX, DSH)
"""The session formats the index reads (index keys, stats)."""

INDEX_FILENAME = "gate-index.sqlite"


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


@attrs.frozen(kw_only=True)
class GateConfig:
    """The index file and the two transcript roots."""

    index_path: Path
    claude_root: Path
    codex_root: Path
    dsh_root: Path | None = None

    @classmethod
    def from_env(cls, *, index_path: Path | None = None) -> GateConfig:
        """Read the environment (never request data); ``index_path`` overrides the index."""
        claude_cfg = _env_path("CLAUDE_CONFIG_DIR")
        codex_home = _env_path("CODEX_HOME")
        return cls(
            index_path=index_path
            or _env_path("AGENT_TASK_GATE_INDEX")
            or user_data_root() / INDEX_FILENAME,
            claude_root=_env_path("AGENT_TASK_CLAUDE_PROJECTS_DIR")
            or (claude_cfg / "projects" if claude_cfg else Path.home() / ".claude" / "projects"),
            codex_root=_env_path("AGENT_TASK_CODEX_SESSIONS_DIR")
            or (codex_home / "sessions" if codex_home else Path.home() / ".codex" / "sessions"),
            dsh_root=_env_path("AGENT_TASK_DSH_SESSIONS_DIR"),
        )

    def roots(self) -> tuple[tuple[str, Path], ...]:
        """(harness, root) pairs (dsh only when its root is configured)."""
        roots = ((CLAUDE_CODE, self.claude_root), (CODEX, self.codex_root))
        return roots + (((DSH, self.dsh_root),) if self.dsh_root is not None else ())


def _within(path: str, root: Path) -> bool:
    try:
        real_root = os.path.realpath(root)
    except (OSError, ValueError):
        return False
    return path.startswith(real_root.rstrip(os.sep) + os.sep)


def checked_transcript(raw: str, config: GateConfig) -> Path:
    """Accept a remote caller's transcript path only inside the roots; resolve symlinks first."""
    refusal = TaskError(
        ErrorCode.INVALID_PATH,
        "transcript_path must be a .jsonl file under the Claude Code or Codex session roots "
        "of this machine",
        path="$.transcript_path",
    )
    if not raw or "\x00" in raw or len(raw) > 4096:
        raise refusal
    try:
        real = os.path.realpath(os.path.expanduser(raw))
        st = os.stat(real)
    except (OSError, ValueError):
        raise refusal from None
    if not stat.S_ISREG(st.st_mode):
        raise refusal
    for harness, root in config.roots():
        suffixes = (".jsonl", ".jsonl.zstd") if harness == DSH else (".jsonl",)
        if real.endswith(suffixes) and _within(real, root):
            return Path(real)
    raise refusal


def harness_of(path: Path, config: GateConfig) -> str:
    """Which harness wrote ``path``: by root, else by the shape of its first line."""
    real = os.path.realpath(path)
    for harness, root in config.roots():
        if _within(real, root):
            return harness
    if real.endswith(".jsonl.zstd"):
        return DSH
    try:
        with open(real, "rb") as f:
            head = f.read(4096)
    except OSError:
        return CLAUDE_CODE
    first = head.split(b"\n", 1)[0]
    if first.startswith(b'{"type":"session","version":'):
        return DSH
    if b'"payload"' in first and (
        b'"session_meta"' in first
        or b'"response_item"' in first
        or b'"event_msg"' in first
        or b'"turn_context"' in first
    ):
        return CODEX
    return CLAUDE_CODE


@functools.lru_cache(maxsize=4096)
def repository_of(cwd: str) -> str:
    """The repository a working directory belongs to: the nearest ancestor holding ``.git``.

    Without one, the directory itself (as the seed's ``Users/saurabh`` row: a session started
    outside a repository stays visible as its own group). Only the file system is consulted.
    """
    if not cwd:
        return ""
    path = os.path.normpath(cwd)
    probe = path
    for _ in range(64):
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return path
