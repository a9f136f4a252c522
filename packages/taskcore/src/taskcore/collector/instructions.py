r"""The managed "Workflow tasks" block in a repository's agent instruction files.

``agent-task init-repo`` writes the block into AGENTS.md, the Cursor rules and the Copilot
instructions (:data:`INSTRUCTION_FILES`). The block sits between :data:`MANAGED_BEGIN` and
:data:`MANAGED_END`; writing again replaces only that block and leaves the rest of the file
exactly as it was.

>>> import pathlib, tempfile
>>> agents = pathlib.Path(tempfile.mkdtemp()) / "AGENTS.md"
>>> _ = agents.write_text("# Project\n")
>>> write_managed_block(agents), write_managed_block(agents)
(True, False)
>>> agents.read_text().startswith("# Project\n\n" + MANAGED_BEGIN)
True
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = [
    "BLOCK",
    "INSTRUCTION_FILES",
    "MANAGED_BEGIN",
    "MANAGED_END",
    "write_instruction_files",
    "write_managed_block",
]

MANAGED_BEGIN: Final = (
    "<!-- BEGIN agent-task: Workflow tasks (managed by 'agent-task init-repo') -->"
)
"""The first line of the managed block."""
MANAGED_END: Final = "<!-- END agent-task: Workflow tasks -->"
"""The last line of the managed block."""

BLOCK: Final = """## Workflow tasks

This repository's work is checked by agent-task. Your environment names the service:
`AGENT_TASK_URL` (the service), `AGENT_TASK_TOKEN_FILE` (your token, kept outside this work
tree), `AGENT_TASK_REPOSITORY` (`ID` or `OWNER/NAME`) and `AGENT_TASK_PROFILE`. The collector
finds its authority through `AGENT_TASK_DATA_DIR` (the service's data dir, on the service's
host) or, on another machine, through `--clone PATH` and the authority key it pinned; its key
lives in `AGENT_TASK_COLLECTOR_DIR`. Every command also takes these as flags.

Discover, then fetch:

1. `agent-task task capabilities` for the supported schema, then `agent-task task next
   --request '{"version": 1, "change_id": "<change>"}'` to see what the installed requirement
   asks.
2. `agent-task task instructions` for a task: every required criterion is inline. Call
   `agent-task task reference` for one named reference only when you need it. A
   `schema_mismatch` carries `server_schema_versions` and a fixed action hint, never a command.
3. Commit your work and run `agent-task checkpoint <change>` (a dirty tree is refused).
4. Run `agent-task collect <change>`: a trusted collector runs the pinned checks on that exact
   revision and uploads signed evidence. A failed run is collected too; the output shows the
   end of its output. If `collect` fails it says why and prints the one command to run next.
5. Run `agent-task qualification <change>`. You are done only when it says `qualified: true`
   for the current subject at your committed revision. `next` is data (collector_claim,
   reconcile, collector_finalize, checkpoint, none); the output prints the command for it:
   `agent-task collect` (claim or finalize), `agent-task reconcile <change>` (an attempt was
   left unresolved), `agent-task checkpoint <change>` (after a fix and a commit), or
   `agent-task checkpoint <change> --retry` (the same revision again, after the operator fixed
   the collector profile).

Your own statements and results never make a task pass; only the collector's validated record
and the authority's receipt do.
"""
"""The block's text: how an agent discovers, checkpoints, collects and qualifies."""


def write_managed_block(path: Path, *, header: str = "") -> bool:
    """Write or replace the managed block in ``path``; return whether the file changed.

    Content outside the block is left exactly as it was.
    """
    block = f"{MANAGED_BEGIN}\n{BLOCK}{MANAGED_END}\n"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    begin, end = old.find(MANAGED_BEGIN), old.find(MANAGED_END)
    if begin != -1 and end != -1 and end > begin:
        stop = end + len(MANAGED_END)
        if old[stop : stop + 1] == "\n":
            stop += 1
        new = old[:begin] + block + old[stop:]
    elif old:
        new = old + ("" if old.endswith("\n") else "\n") + "\n" + block
    else:
        new = header + block
    if new == old:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")
    return True


INSTRUCTION_FILES: Final = (
    ("AGENTS.md", ""),
    (
        ".cursor/rules/agent-task.mdc",
        "---\ndescription: agent-task workflow tasks\nalwaysApply: true\n---\n",
    ),
    (".github/copilot-instructions.md", ""),
)
"""Each instruction file (relative to the repository root) and the header a new one starts with."""


def write_instruction_files(root: Path) -> dict[str, bool]:
    """Write the managed block into every :data:`INSTRUCTION_FILES` under ``root``.

    Returns, per file, whether it changed.
    """
    return {name: write_managed_block(root / name, header=head) for name, head in INSTRUCTION_FILES}
