"""The front-door operation ``session_gate``: an MCP tool, an HTTP verb and a CLI call.

A service caller is remote by definition: a ``transcript_path`` it sends is accepted only
when, with symlinks resolved, it is a regular ``.jsonl`` file inside the Claude Code or Codex
roots of the machine the service runs on; ``session_id`` and ``cwd`` are looked up in the
index only. The operation reads transcripts and the gate index, never the journal.

The sessions it answers about are the service host's own; they belong to no workspace. So
through a network door (HTTP, MCP over HTTP) it answers only tokens of the workspaces named in
:attr:`taskcore.ServiceConfig.session_gate_workspaces`: none by default (``FORBIDDEN``); the
operator of a single-user host names the workspace its sessions belong to
(``agent-task serve --session-gate-workspace W``). In process, from the CLI and on
``agent-task mcp --stdio`` (whose caller is the local user) it answers as before.
"""

from __future__ import annotations

from taskcore.actors import Actor, RiskClass, Tier
from taskcore.donegate.session_gate import SessionGateIn, SessionGateResult, session_gate
from taskcore.errors import ErrorCode, TaskError
from taskcore.registry import FrontDoor
from taskcore.service import CallContext, Door, Operation, Registry, Surface, TxMode

__all__ = ["SESSION_GATE", "answers", "register"]

SESSION_GATE = "session_gate"


_NETWORK_DOORS = frozenset({Door.HTTP, Door.MCP})


def answers(service: FrontDoor, actor: Actor, door: Door) -> bool:
    """Whether ``session_gate`` answers ``actor`` through ``door`` (the listing asks too)."""
    allowed = service.config.session_gate_workspaces
    return door not in _NETWORK_DOORS or allowed is None or actor.workspace in allowed


def _handle(ctx: CallContext, request: SessionGateIn) -> SessionGateResult:
    if not answers(ctx.service, ctx.actor, ctx.door):
        raise TaskError(
            ErrorCode.FORBIDDEN,
            "session_gate answers about the coding-agent sessions of the service host, which "
            "belong to no workspace of yours; ask it locally ('agent-task gate --cwd DIR' or "
            "'agent-task mcp --stdio'), or ask the operator of a single-user host to name "
            "your workspace with 'agent-task serve --session-gate-workspace W'",
        )
    return session_gate(request, remote=True).result


def register(registry: Registry) -> None:
    """Register ``session_gate``."""
    registry.register(
        Operation(
            name=SESSION_GATE,
            summary="Where one coding-agent session stands on the evidence ladder, right now.",
            description=(
                "Name the session with exactly one of session_id, transcript_path (a .jsonl under "
                "the Claude Code or Codex session roots) or cwd (the latest indexed session of that "
                "repository). Returns rung (0-5), rung_name, below_line, missing (the one missing "
                "condition), receipt_lines (at most six), budget_left (Stop-hook re-entries left "
                "for the current prompt), stale (a check passed before the last change) and "
                "indexed. Read-only: never calls a model, runs a command or edits a file."
            ),
            input_type=SessionGateIn,
            output_type=SessionGateResult,
            min_tier=Tier.AGENT,
            risk=RiskClass.READ,
            idempotent=True,
            mcp=True,
            surface=Surface.GATE,
            handler=_handle,
            tx=TxMode.OWN,
            offered_to=answers,
        )
    )
