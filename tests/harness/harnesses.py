"""Run the real Claude Code and Codex CLIs against the scripted model, offline.

Each run gets its own ``HOME`` (and ``CODEX_HOME``), a ``PATH`` that starts with this
checkout's virtual environment (so the agent's shell finds ``agent-task`` and ``pytest``), the
deny-all proxy in ``HTTPS_PROXY``/``HTTP_PROXY`` with ``NO_PROXY`` for 127.0.0.1, and every
switch each harness documents for staying quiet (no telemetry, no update check, no error
reporting, no plugin catalogue). Nothing else of the caller's environment is passed on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "AGENT_TASK",
    "VENV_BIN",
    "Run",
    "base_env",
    "claude_env",
    "codex_config",
    "codex_env",
    "run_claude",
    "run_codex",
]

VENV_BIN = Path(sys.executable).parent
AGENT_TASK = VENV_BIN / "agent-task"
RUN_TIMEOUT_S = 180


@attrs.frozen
class Run:
    """One finished harness run."""

    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """Claude Code's ``--output-format json`` result object."""
        return json.loads(self.stdout)

    def events(self) -> list[dict[str, Any]]:
        """Codex's ``exec --json`` event lines."""
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out


def base_env(home: Path, proxy_url: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every harness run starts from."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "HTTPS_PROXY": proxy_url,
        "HTTP_PROXY": proxy_url,
        "https_proxy": proxy_url,
        "http_proxy": proxy_url,
        "ALL_PROXY": proxy_url,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    env.update(extra or {})
    return env


def claude_env(
    home: Path, model_url: str, proxy_url: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Claude Code pointed at the scripted model, with its non-essential traffic off."""
    env = base_env(home, proxy_url)
    env.update(
        {
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": "sk-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            # --dangerously-skip-permissions refuses to run as root outside a sandbox.
            "IS_SANDBOX": "1",
        }
    )
    env.update(extra or {})
    return env


def run_claude(
    binary: Path,
    prompt: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    args: Sequence[str] = (),
) -> Run:
    """``claude -p PROMPT --output-format json --dangerously-skip-permissions [ARGS]``."""
    done = subprocess.run(
        [
            str(binary),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            *args,
        ],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    return Run(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def codex_config(
    model_url: str,
    *,
    trusted: Sequence[Path] = (),
    extra: str = "",
) -> str:
    """``config.toml``: a custom Responses provider on 127.0.0.1 and every outside call off.

    ``wire_api = "responses"`` is the only value current Codex accepts. ``trusted`` projects
    get ``trust_level = "trusted"`` (Codex ignores a project's ``.codex/`` otherwise).
    """
    lines = [
        'model = "scripted"',
        'model_provider = "scripted"',
        "check_for_update_on_startup = false",
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        f'base_url = "{model_url}/v1"',
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[feedback]",
        "enabled = false",
        "",
        "[features]",
        "plugins = false",
        "remote_plugin = false",
        "apps = false",
        "plugin_sharing = false",
        "",
    ]
    for project in trusted:
        lines += [f"[projects.{json.dumps(str(project))}]", 'trust_level = "trusted"', ""]
    return "\n".join(lines) + extra


def codex_env(
    home: Path, codex_home: Path, proxy_url: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Codex with its own ``CODEX_HOME`` (holding ``config.toml``)."""
    env = base_env(home, proxy_url)
    env.update({"CODEX_HOME": str(codex_home), "SCRIPTED_API_KEY": "sk-test"})
    env.update(extra or {})
    return env


def run_codex(
    binary: Path,
    prompt: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    args: Sequence[str] = (),
    bypass_hook_trust: bool = True,
) -> Run:
    """``codex exec --json`` without sandbox or approvals, hooks run without the trust review.

    ``--dangerously-bypass-hook-trust`` stands in for the one-time review a user does in
    Codex's ``/hooks`` (without it Codex silently skips an unreviewed hook);
    ``bypass_hook_trust=False`` leaves it out, for a test that trusts the hooks as a user does.
    """
    trust = ["--dangerously-bypass-hook-trust"] if bypass_hook_trust else []
    done = subprocess.run(
        [
            str(binary),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            *trust,
            "--json",
            *args,
            prompt,
        ],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    return Run(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )
