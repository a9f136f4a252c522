"""A live service with the real operation registry, and an in-process ``agent-task`` runner."""

from __future__ import annotations

import os
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


def agent_task(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Run ``agent-task ARGS`` in process; stdout and stderr are kept apart."""
    return CliRunner().invoke(
        load_commands(), list(args), input=input, env=env, catch_exceptions=False
    )
