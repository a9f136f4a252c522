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

import os
import stat
from pathlib import Path

import attrs

from taskcore.donegate.light import (
    CLAUDE_CODE,
    CODEX,
    DSH,
    env_locations,
    harness_of_real,
    repository_of,
    within,
)
from taskcore.errors import ErrorCode, TaskError

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

HARNESSES = (CLAUDE_CODE, CODEX)
"""The harnesses whose Stop hook output the gate speaks (``--harness`` of the hook and the
installer). dsh runs Codex hooks through its compatibility layer, so it uses ``codex``."""
ADAPTERS = (CLAUDE_CODE, CODEX, DSH)
"""The session formats the index reads (index keys, stats)."""


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
        index, claude, codex, dsh = env_locations(str(index_path) if index_path else None)
        return cls(
            index_path=Path(index),
            claude_root=Path(claude),
            codex_root=Path(codex),
            dsh_root=Path(dsh) if dsh is not None else None,
        )

    def roots(self) -> tuple[tuple[str, Path], ...]:
        """(harness, root) pairs (dsh only when its root is configured)."""
        roots = ((CLAUDE_CODE, self.claude_root), (CODEX, self.codex_root))
        return roots + (((DSH, self.dsh_root),) if self.dsh_root is not None else ())


def _within(path: str, root: Path) -> bool:
    return within(path, str(root))


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
    return harness_of_real(
        os.path.realpath(path), [(harness, str(root)) for harness, root in config.roots()]
    )
