"""A live service with the real operation registry, and an in-process ``agent-task`` runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner, Result
from taskcli.main import load_commands
from taskcore import Service, Tier
from taskcore.auth import TokenAdmin
from taskhttp import BackgroundServer, create_app

ROLES = {
    "admin": ("w1", Tier.ADMIN, 3),
    "member": ("w1", Tier.MEMBER, 2),
    "agent": ("w1", Tier.AGENT, 1),
    "other": ("w2", Tier.ADMIN, 3),
}


class RealLive:
    """``agent-task``'s own service on a socket, with token files per role."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.token_files: dict[str, Path] = {}
        self.token_ids: dict[str, str] = {}
        with TokenAdmin(data_dir, create=True) as admin:
            for role, (workspace, tier, autonomy) in ROLES.items():
                issued = admin.create(workspace=workspace, tier=tier, autonomy=autonomy, name=role)
                path = data_dir / f"{role}.token"
                path.write_text(issued.token + "\n")
                os.chmod(path, 0o600)
                self.token_files[role] = path
                self.token_ids[role] = issued.record.token_id
        self.service = Service.open(data_dir)
        self.server = BackgroundServer(create_app(self.service))
        self.url = self.server.start()

    def stop(self) -> None:
        self.server.stop()
        self.service.close()

    def args(self, role: str = "admin") -> list[str]:
        return ["--url", self.url, "--token-file", str(self.token_files[role])]


def agent_task(
    *args: str, input: str | None = None, env: Mapping[str, str | None] | None = None
) -> Result:
    """Run ``agent-task ARGS`` in process; stdout and stderr are kept apart."""
    return CliRunner().invoke(
        load_commands(), list(args), input=input, env=env, catch_exceptions=False
    )


def agent_world(
    tmp_path: Path, *, path_tail: str | None = None
) -> tuple[Path, Path, dict[str, str | None]]:
    """A home, a git project and the environment ``agent setup`` / ``doctor`` run with.

    Every variable that would point a harness or our commands elsewhere is cleared. ``PATH``
    is the test interpreter's ``bin`` and then ``path_tail`` (default: the test's own PATH).
    """
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    tail = os.environ.get("PATH", "") if path_tail is None else path_tail
    env: dict[str, str | None] = {
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{tail}",
        "CLAUDE_CONFIG_DIR": None,
        "CODEX_HOME": None,
        "XDG_CONFIG_HOME": None,
        "AGENT_TASK_URL": None,
        "AGENT_TASK_TOKEN_FILE": None,
        "AGENT_TASK_TOKEN": None,
        "AGENT_TASK_GRANT_FILE": None,
    }
    return home, project, env


def agent_setup(
    live: RealLive,
    world: tuple[Path, Path, dict[str, str | None]],
    *extra: str,
    harness: str,
    scope: str,
) -> Result:
    """``agent setup --harness H --scope S --project-dir P --url URL EXTRA...`` in ``world``."""
    _, project, env = world
    return agent_task(
        "agent",
        "setup",
        "--harness",
        harness,
        "--scope",
        scope,
        "--project-dir",
        str(project),
        "--url",
        live.url,
        *extra,
        env=env,
    )
