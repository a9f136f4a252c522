"""The done gate: the evidence ladder read from Claude Code and Codex transcripts.

When a coding agent is about to stop, the gate asks what evidence the session left: files
written, checks run and passed after the last change, commits, pushes. Below the line (rung 1
or 2) the Stop hook hands a six-line receipt back into the loop, at most three times per user
prompt; above it the gate is silent. It never calls a model, never runs a command, never edits
a file but its own index, and sends nothing anywhere.

Modules: :mod:`~taskcore.donegate.commands` (shell classifier), :mod:`~taskcore.donegate.claude` and
:mod:`~taskcore.donegate.codex` (readers), :mod:`~taskcore.donegate.evidence` (resumable state),
:mod:`~taskcore.donegate.ladder`, :mod:`~taskcore.donegate.receipt`, :mod:`~taskcore.donegate.budget`,
:mod:`~taskcore.donegate.index`, :mod:`~taskcore.donegate.session_gate`, :mod:`~taskcore.donegate.hook`,
:mod:`~taskcore.donegate.installer`, :mod:`~taskcore.donegate.stats`, :mod:`~taskcore.donegate.operations`.
Submodules are imported on use so the Stop hook loads only what it needs.
"""

__all__: list[str] = []
