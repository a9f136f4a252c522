r"""Ask Codex itself which hooks it loads for a project and whether each is trusted.

Codex runs a non-managed hook only once its exact definition is reviewed and trusted; trust
is recorded in ``$CODEX_HOME/config.toml`` as ``[hooks.state."<key>"] trusted_hash =
"sha256:..."``, where the key is ``<hooks file>:<event>:<group>:<handler>`` and the hash is
Codex's own over the normalized definition. The hash's recipe changes with Codex releases,
so it is not recomputed here: ``codex app-server`` answers ``hooks/list`` (its JSON-RPC over
stdio) with every hook it discovered for a directory, its ``key``, ``currentHash`` and
``trustStatus`` (``trusted``, ``untrusted``, ``modified``, ``managed``). ``agent doctor``
reads that and prints, for each of our hooks that is not trusted, the exact lines that trust
it, or the ``/hooks`` review.

>>> trust_lines([{"key": "/p/.codex/hooks.json:stop:0:0", "currentHash": "sha256:ab"}])
'[hooks.state."/p/.codex/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:ab"\n'
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from taskcore.agentsetup.tomledit import basic_string
from taskcore.errors import ErrorCode, TaskError

__all__ = ["APP_SERVER_TIMEOUT_SECONDS", "list_hooks", "trust_lines"]

APP_SERVER_TIMEOUT_SECONDS = 30
"""How long ``codex app-server`` may take to answer ``hooks/list``."""


def _requests(cwd: Path) -> bytes:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "agent-task-doctor", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    return "".join(json.dumps(m) + "\n" for m in messages).encode()


def list_hooks(
    codex: str, cwd: Path, *, env: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """The hooks Codex discovers for ``cwd`` (``hooks/list``), as its app server lists them.

    ``STORAGE_UNAVAILABLE`` when the app server cannot be started or does not answer in
    :data:`APP_SERVER_TIMEOUT_SECONDS`, ``MALFORMED_RESPONSE`` for an answer of another shape.
    """
    try:
        proc = subprocess.Popen(  # noqa: S603 - the codex executable the user named, fixed argv
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(cwd),
            env=dict(env) if env is not None else dict(os.environ),
        )
    except OSError as err:
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE, f"codex app-server could not start ({err.strerror})"
        ) from None
    timer = threading.Timer(APP_SERVER_TIMEOUT_SECONDS, proc.kill)
    timer.start()
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(_requests(cwd))
        proc.stdin.flush()
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or message.get("id") != 2:
                continue
            if "error" in message:
                raise TaskError(
                    ErrorCode.MALFORMED_RESPONSE,
                    f"codex app-server refused hooks/list: {str(message['error'])[:200]}",
                )
            return _entries(message.get("result"))
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE,
            f"codex app-server gave no hooks/list answer within {APP_SERVER_TIMEOUT_SECONDS} s",
        )
    except (OSError, ValueError):
        raise TaskError(
            ErrorCode.STORAGE_UNAVAILABLE, "codex app-server stopped before it answered"
        ) from None
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()


def _entries(result: Any) -> list[dict[str, Any]]:
    data = result.get("data") if isinstance(result, dict) else None
    if not isinstance(data, list):
        raise TaskError(ErrorCode.MALFORMED_RESPONSE, "hooks/list answered without data")
    out: list[dict[str, Any]] = []
    for entry in data:
        hooks = entry.get("hooks") if isinstance(entry, dict) else None
        if isinstance(hooks, list):
            out += [h for h in hooks if isinstance(h, dict)]
    return out


def trust_lines(hooks: Sequence[Mapping[str, Any]]) -> str:
    """The ``config.toml`` lines that trust ``hooks`` exactly as Codex lists them."""
    return "".join(
        f"[hooks.state.{basic_string(str(h['key']))}]\n"
        f"trusted_hash = {basic_string(str(h['currentHash']))}\n"
        for h in hooks
    )
