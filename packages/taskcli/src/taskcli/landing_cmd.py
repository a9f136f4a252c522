"""``agent-task landing install|uninstall`` (the hook), ``agent-task land``, ``agent-task forge``.

Options and output only: the hook, its installation and the landing live in
:mod:`taskcore.evidence` (``landing_install``, ``land``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from taskcore import ErrorCode, TaskError
from taskcore.evidence.forge import outbox_view
from taskcore.evidence.land import land_in_data_dir
from taskcore.evidence.landing_install import HookSettings, install_hook, uninstall_hook
from taskcore.limits import LANDING_TIMEOUT_DEFAULT_SECONDS

from taskcli.common import (
    ServiceClient,
    data_dir_option,
    emit,
    json_option,
    resolve_data_dir,
    route_options,
    run,
)

__all__ = ["register"]


@click.group("landing")
def landing_group() -> None:
    """Gate pushes to protected refs of a bare repository on the authority's landing check."""


_git_dir_option = click.option(
    "--git-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The bare repository pushes land in (absolute path).",
)


@landing_group.command("install")
@_git_dir_option
@click.option("--repository", required=True, help="Repository ID (or OWNER/NAME) on the service.")
@click.option("--profile", required=True, help="Profile whose target the refs are.")
@click.option(
    "--protect",
    "protect",
    multiple=True,
    required=True,
    help="A full ref a push may move only when admitted, e.g. refs/heads/main (repeat).",
)
@click.option("--url", required=True, help="The service's base URL as the git host reaches it.")
@click.option(
    "--token-file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Absolute path of the file holding the hook's bearer token (read at every push).",
)
@click.option(
    "--timeout",
    type=int,
    default=LANDING_TIMEOUT_DEFAULT_SECONDS,
    show_default=True,
    help="Seconds to wait for the authority before the push is refused.",
)
@click.option(
    "--fail-open",
    is_flag=True,
    help="Let a protected update through UNCHECKED when the authority cannot answer "
    "(never when it refuses); every such pass says so. Off by default.",
)
@json_option
def install_command(
    git_dir: Path,
    repository: str,
    profile: str,
    protect: tuple[str, ...],
    url: str,
    token_file: Path,
    timeout: int,
    fail_open: bool,
    as_json: bool,
) -> None:
    """Write the pre-receive landing hook into a bare repository.

    The service is asked first, with the hook's own token, for the profile's target: a
    --protect ref the profile cannot admit (every push to it would be refused,
    target_mismatch) is refused here, and a URL or token the hook could not use is found now
    rather than at the first push. One hook asks one profile: protect that profile's target.
    """

    def act() -> dict[str, Any]:
        settings = HookSettings(
            url=url,
            repository=repository,
            profile=profile,
            protect=tuple(dict.fromkeys(protect)),
            token_file=str(token_file),
            timeout=timeout,
            fail_open=fail_open,
        )
        settings.check()
        answer = ServiceClient(url, token_file, timeout=float(timeout)).workflow(
            repository, profile, "requirements", b'{"version": 1, "change_id": null}'
        )
        outcome = install_hook(git_dir, settings, target=str(answer["result"]["target"]))
        return {
            "hook": str(outcome.path),
            "replaced": outcome.replaced,
            "protect": list(outcome.settings.protect),
            "fail_open": outcome.settings.fail_open,
        }

    emit(run(as_json, act), as_json)


@landing_group.command("uninstall")
@_git_dir_option
@json_option
def uninstall_command(git_dir: Path, as_json: bool) -> None:
    """Remove the hook 'landing install' wrote (a changed or foreign hook is left alone)."""

    def act() -> dict[str, Any]:
        return {"removed": str(uninstall_hook(git_dir))}

    emit(run(as_json, act), as_json)


@click.command("land")
@click.argument("change")
@click.option("--into", required=True, help="The protected target: a branch (main) or full ref.")
@click.option(
    "--merge",
    is_flag=True,
    help="If the target cannot fast-forward, land a merge commit (its content must be the "
    "qualified revision).",
)
@route_options
@data_dir_option
@json_option
def land_command(
    change: str,
    into: str,
    merge: bool,
    repository: str | None,
    profile: str | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Move the target ref to CHANGE's qualified commit if the authority admits it now.

    Runs on the service host against --data-dir and the registered repository; the ref moves
    with a compare-and-swap, so a concurrent landing loses cleanly.
    """

    def act() -> dict[str, Any]:
        if not repository or not profile:
            raise TaskError(
                ErrorCode.BAD_INPUT,
                "give --repository and --profile (or AGENT_TASK_REPOSITORY and AGENT_TASK_PROFILE)",
            )
        outcome = land_in_data_dir(
            resolve_data_dir(data_dir),
            repository_id=repository,
            profile_id=profile,
            change_id=change,
            into=into,
            merge=merge,
        )
        return outcome.to_json()

    def render(value: dict[str, Any]) -> str:
        if not value["moved"]:
            return f"{value['ref']} is already at {value['new'][:12]}; nothing to land"
        how = "merge commit" if value["merged"] else "fast-forward"
        old = (value["old"] or "(new)")[:12]
        receipt = (value["receipt_digest"] or "")[:16]
        return (
            f"landed Change {value['change_id']} on {value['ref']}: {old} -> "
            f"{value['new'][:12]} ({how}), receipt {receipt}"
        )

    emit(run(as_json, act), as_json, render)


@click.group("forge")
def forge_group() -> None:
    """Forge commit statuses (publish_forge_status): what is queued and how delivery went."""


@forge_group.command("outbox")
@click.option("--repository", default=None, help="Only this repository's statuses.")
@click.option("--limit", type=int, default=50, show_default=True, help="Newest rows to show.")
@data_dir_option
@json_option
def outbox_command(
    repository: str | None, limit: int, data_dir: Path | None, as_json: bool
) -> None:
    """List the newest commit statuses and their delivery (service host, read-only)."""

    def act() -> list[dict[str, Any]]:
        return outbox_view(resolve_data_dir(data_dir), repository_id=repository, limit=limit)

    def render(rows: list[dict[str, Any]]) -> str:
        if not rows:
            return "no commit statuses"
        return "\n".join(
            f"{r['seq']:>5} {r['commit'][:12]} {r['context']} {r['state']:<7} {r['status']:<10} "
            f"attempts {r['attempts']}" + (f" ({r['last_error']})" if r["last_error"] else "")
            for r in rows
        )

    emit(run(as_json, act), as_json, render)


def register(group: click.Group) -> None:
    """Add ``landing``, ``land`` and ``forge``."""
    group.add_command(landing_group)
    group.add_command(land_command)
    group.add_command(forge_group)
