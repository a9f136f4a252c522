"""The done gate: the evidence ladder read from Claude Code and Codex transcripts.

When a coding agent is about to stop, the gate asks what evidence the session left: files
written, checks run and passed after the last change, commits, pushes. Below the line (rung 1
or 2) the Stop hook hands a six-line receipt back into the loop, at most three times per user
prompt; above it the gate is silent. It never calls a model, never runs a command, never edits
a file but its own index, and sends nothing anywhere.

Modules: :mod:`~taskcore.gate.commands` (shell classifier), :mod:`~taskcore.gate.claude` and
:mod:`~taskcore.gate.codex` (readers), :mod:`~taskcore.gate.evidence` (resumable state),
:mod:`~taskcore.gate.ladder`, :mod:`~taskcore.gate.receipt`, :mod:`~taskcore.gate.budget`,
:mod:`~taskcore.gate.index`, :mod:`~taskcore.gate.session_gate`, :mod:`~taskcore.gate.hook`,
:mod:`~taskcore.gate.installer`, :mod:`~taskcore.gate.stats`, :mod:`~taskcore.gate.operations`.
Submodules are imported on use so the Stop hook loads only what it needs.
"""

__all__: list[str] = []
