"""Setting up a coding agent: what to write for each harness, and the SessionStart hook's words.

``agent-task agent setup --harness claude-code|codex`` writes a harness's MCP server entry and
installs the done gate (Stop, SubagentStop), the task-stop hook (with a Change) and the
SessionStart hook; ``agent-task agent doctor`` checks each piece. What to write is data and
logic here; the command (:mod:`taskcli.agent_cmd`) reads the files, prints the diff and writes
them.

Modules:

* :mod:`~taskcore.agentsetup.harness`: the files of each harness and scope, the MCP entry, the
  hook commands and events (the data);
* :mod:`~taskcore.agentsetup.jsonedit` and :mod:`~taskcore.agentsetup.tomledit`: edits of a
  settings file's text that keep everything else as it was;
* :mod:`~taskcore.agentsetup.plan`: the whole change (or removal) as old and new texts, and
  its unified diff;
* :mod:`~taskcore.agentsetup.doctor`: the checks, each with its fix;
* :mod:`~taskcore.agentsetup.sessionstart`: the SessionStart hook's request and the
  ``additionalContext`` it prints (standard library only: the hook starts at every session).

Submodules are imported on use, so the hook loads only what it needs.
"""

__all__: list[str] = []
