"""``agent-task operator ...``: the operator's trusted-local acts on the authority.

Every command is one ``operator.*`` operation on the journal in ``--data-dir``, called in
process through :class:`taskcore.operator_ops.AuthorityAdmin` (the operator sits on the
service host): checked, run in one transaction and audited once like every call, refused
ones included. No network door offers these operations, so no request body can name a path. See
``docs/operator.md`` for the whole set-up, in order:

1. ``register-repository`` a git work tree (or ``apply`` an ``agent_task_profiles`` config);
2. ``install-requirement`` (a file, or ``--test-step`` for one required TEST step);
3. ``register-profile`` pinning a target and the requirement digest;
4. ``enroll`` a collector's public key (printed by ``agent-task collector keygen``) for one
   repository and step: a new epoch each time;
5. ``install-collector-profile`` pinning the command recipe and the runtime identity (a
   separate act: enrollment alone never produces a receipt);
6. ``revoke`` an epoch when the key must stop counting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from taskcore import TaskError
from taskcore.authority import decode_requirement
from taskcore.authority.config import decode_config
from taskcore.authority.operator import collector_test_requirement, runtime_here
from taskcore.codec import default_codec
from taskcore.collector.sandbox import isolation_policy
from taskcore.contract import CommandCollectorProfile, CommandRecipe, decode_collector_profile
from taskcore.errors import ErrorCode
from taskcore.operator_ops import AuthorityAdmin

from taskcli.collector_cmd import isolation_options
from taskcli.common import data_dir_option, emit, human, json_option, resolve_data_dir, run

__all__ = ["register"]


@click.group("operator")
def operator_group() -> None:
    """Operator acts on the authority (run on the service host, against --data-dir)."""


def _admin(data_dir: Path | None, *, create: bool = False) -> AuthorityAdmin:
    """The operator's acts on the data dir; only the first acts (register, apply) create it."""
    return AuthorityAdmin(resolve_data_dir(data_dir), create=create)


def _read(path: Path, limit: int = 1 << 20) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise TaskError(ErrorCode.BAD_INPUT, f"cannot read {path}: {exc.strerror}") from None
    if len(data) > limit:
        raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, f"{path} is larger than {limit} bytes")
    return data


# -- repositories, requirements, profiles ----------------------------------------------------


@operator_group.command("register-repository")
@click.option("--workspace", required=True, help="Workspace whose tokens may use it.")
@click.option("--repository", required=True, help="Repository ID.")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@data_dir_option
@json_option
def register_repository_command(
    workspace: str, repository: str, path: Path, data_dir: Path | None, as_json: bool
) -> None:
    """Register the git work tree at PATH (absolute) as REPOSITORY of WORKSPACE."""

    def act() -> dict[str, Any]:
        with _admin(data_dir, create=True) as admin:
            record = admin.register_repository(
                workspace=workspace, repository_id=repository, work_tree=path
            )
        return {
            "repository_id": record.repository_id,
            "workspace": record.workspace,
            "work_tree": record.work_tree,
            "policy_epoch": record.policy_epoch,
        }

    emit(run(as_json, act), as_json)


@operator_group.command("install-requirement")
@click.option("--repository", required=True, help="Repository ID.")
@click.option(
    "--test-step",
    default=None,
    metavar="STEP",
    help="Install one required TEST step STEP, satisfied only by a collector.",
)
@click.option("--summary", default="The tests pass on the exact revision.", show_default=True)
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@data_dir_option
@json_option
def install_requirement_command(
    repository: str,
    test_step: str | None,
    summary: str,
    file: Path | None,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Install a WorkflowRequirement from FILE (JSON), or a TEST step with --test-step."""

    def act() -> dict[str, Any]:
        if (file is None) == (test_step is None):
            raise TaskError(ErrorCode.BAD_INPUT, "give a requirement FILE or --test-step, not both")
        requirement = (
            collector_test_requirement(test_step, summary)
            if test_step is not None
            else decode_requirement(_read(file))  # type: ignore[arg-type]
        )
        with _admin(data_dir) as admin:
            installed = admin.install_requirement(repository_id=repository, requirement=requirement)
        return {
            "repository_id": repository,
            "requirement_id": requirement.requirement_id,
            "requirement_digest": installed.requirement_digest,
            "plan_digest": installed.plan_digest,
            "created": installed.created,
        }

    emit(run(as_json, act), as_json)


@operator_group.command("register-profile")
@click.option("--repository", required=True, help="Repository ID.")
@click.option("--profile", required=True, help="Workflow (task) profile ID.")
@click.option("--target", required=True, help="Protected target, e.g. main.")
@click.option("--requirement", required=True, help="Installed requirement digest (64 hex).")
@data_dir_option
@json_option
def register_profile_command(
    repository: str,
    profile: str,
    target: str,
    requirement: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Register a task-only profile pinning a target and an installed requirement."""

    def act() -> dict[str, Any]:
        with _admin(data_dir) as admin:
            record = admin.register_profile(
                repository_id=repository,
                profile_id=profile,
                target=target,
                requirement_digest=requirement,
            )
        return {
            "repository_id": record.repository_id,
            "profile_id": record.profile_id,
            "target": record.target,
            "requirement_digest": record.requirement_digest,
            "generation": record.generation,
        }

    emit(run(as_json, act), as_json)


# -- the agent_task_profiles config file ------------------------------------------------------


@operator_group.command("apply")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@data_dir_option
@json_option
def apply_command(config: Path, data_dir: Path | None, as_json: bool) -> None:
    """Apply a strict version-1 agent_task_profiles CONFIG (JSON) to --data-dir.

    Requirements must be installed first (the entries pin their digests).
    """

    def act() -> list[dict[str, Any]]:
        parsed = decode_config(_read(config))
        with _admin(data_dir, create=True) as admin:
            applied = admin.apply_config(parsed)
        return [
            {
                "repository_id": record.repository_id,
                "profile_id": record.profile_id,
                "generation": record.generation,
            }
            for record in applied
        ]

    emit(run(as_json, act), as_json)


# -- enrollment, collector profiles, revocation ------------------------------------------------


@operator_group.command("enroll")
@click.option("--repository", required=True, help="Repository ID.")
@click.option("--step", required=True, help="Step the key may collect for.")
@click.option("--registration", required=True, help="Registration ID (epochs count per ID).")
@click.option("--executor", required=True, help="Executor ID (e.g. the collector host).")
@click.option("--public-key", required=True, help="Ed25519 public key, 64 hex.")
@data_dir_option
@json_option
def enroll_command(
    repository: str,
    step: str,
    registration: str,
    executor: str,
    public_key: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Enroll a collector's public key for one repository and step (a new epoch each time)."""

    def act() -> dict[str, Any]:
        with _admin(data_dir, create=False) as admin:
            enrollment = admin.enroll(
                registration_id=registration,
                executor_id=executor,
                repository_id=repository,
                step_id=step,
                public_key=public_key,
            )
            identity = admin.authority_identity()
        return {
            "registration_id": enrollment.registration_id,
            "registration_epoch": enrollment.registration_epoch,
            "executor_id": enrollment.executor_id,
            "verification_key_id": enrollment.verification_key_id,
            "note": "enrollment grants no receipt; install a collector profile for this epoch",
            **_authority(identity),
        }

    emit(run(as_json, act), as_json)


def _authority(identity: Any) -> dict[str, Any]:
    return {
        "authority_public_key": identity.public_key,
        "authority_key_id": identity.key_id,
        "audience": identity.audience,
        "pin_on_a_remote_collector": (
            "agent-task collector pin-authority --public-key "
            f"{identity.public_key} --audience {identity.audience}"
        ),
    }


@operator_group.command("authority")
@data_dir_option
@json_option
def authority_command(data_dir: Path | None, as_json: bool) -> None:
    """Print the authority's descriptor-signing key and audience (what a remote collector pins)."""

    def act() -> dict[str, Any]:
        with _admin(data_dir, create=False) as admin:
            return _authority(admin.authority_identity())

    emit(run(as_json, act), as_json)


@operator_group.command("install-collector-profile")
@click.option(
    "--file",
    "file",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A CollectorProfile JSON (command or finite_review); else the options below.",
)
@click.option("--profile-id", default=None, help="ID of the new (immutable) collector profile.")
@click.option("--repository", default=None, help="Repository ID.")
@click.option("--profile", default=None, help="Workflow (task) profile ID.")
@click.option("--step", default=None, help="Step ID.")
@click.option("--registration", default=None, help="Registration ID.")
@click.option("--epoch", type=int, default=None, help="Registration epoch (default: newest).")
@click.option("--arg", "argv", multiple=True, help="One argv item of the command (repeat).")
@click.option("--workdir", default=".", show_default=True, help="Working directory in the tree.")
@click.option("--allow-env", multiple=True, help="Environment name passed through (repeat).")
@click.option("--timeout-ms", type=int, default=600_000, show_default=True)
@click.option(
    "--output-limit",
    type=int,
    default=1 << 20,
    show_default=True,
    help="Retained output bound, bytes.",
)
@click.option(
    "--runtime-identity",
    default=None,
    help="Pinned runtime identity (64 hex); default: probe this machine now.",
)
@isolation_options
@data_dir_option
@json_option
def install_collector_profile_command(
    file: Path | None,
    profile_id: str | None,
    repository: str | None,
    profile: str | None,
    step: str | None,
    registration: str | None,
    epoch: int | None,
    argv: tuple[str, ...],
    workdir: str,
    allow_env: tuple[str, ...],
    timeout_ms: int,
    output_limit: int,
    runtime_identity: str | None,
    isolation: dict[str, Any],
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Install an immutable collector profile pinning a recipe and the runtime identity.

    Installing is a separate act from enrollment; a newer profile for the same repository,
    workflow profile and step supersedes the older one. The isolation options pin the
    sandbox the command requires (see docs/collector.md); without them the profile pins
    whatever sandbox this machine gives now, through the probed runtime identity.
    """

    def act() -> dict[str, Any]:
        with _admin(data_dir) as admin:
            if file is not None:
                collector_profile = decode_collector_profile(_read(file))
            else:
                missing = [
                    name
                    for name, value in (
                        ("--profile-id", profile_id),
                        ("--repository", repository),
                        ("--profile", profile),
                        ("--step", step),
                        ("--registration", registration),
                    )
                    if not value
                ]
                if not (argv and profile_id and repository and profile and step and registration):
                    raise TaskError(
                        ErrorCode.BAD_INPUT,
                        f"give --file, or {', '.join(missing + ([] if argv else ['--arg']))}",
                    )
                recipe = default_codec().structure(
                    {
                        "argv": list(argv),
                        "working_directory": workdir,
                        "environment_allowlist": list(allow_env),
                        "timeout_ms": timeout_ms,
                        "output_limit_bytes": output_limit,
                    },
                    CommandRecipe,
                )
                collector_profile = admin.command_collector_profile(
                    profile_id=profile_id,
                    repository_id=repository,
                    workflow_profile_id=profile,
                    step_id=step,
                    registration_id=registration,
                    recipe=recipe,
                    registration_epoch=epoch,
                    runtime_identity=runtime_identity,
                    isolation=isolation_policy(isolation),
                )
            record = admin.install_collector_profile(collector_profile)
        out: dict[str, Any] = {
            "profile_id": record.profile_id,
            "digest": record.digest,
            "repository_id": record.repository_id,
            "workflow_profile_id": record.workflow_profile_id,
            "step_id": record.step_id,
            "registration_id": record.registration_id,
            "registration_epoch": record.registration_epoch,
        }
        if isinstance(collector_profile, CommandCollectorProfile):
            here = runtime_here(
                collector_profile.recipe,
                collector_profile.runtime_identity_sha256,
                isolation=collector_profile.isolation,
            )
            out.update(
                argv=list(collector_profile.recipe.argv),
                argv0_resolved=here.executable,
                sandbox=here.sandbox,
                runtime_identity_sha256=collector_profile.runtime_identity_sha256,
                runtime_matches_this_host=here.matches,
            )
        return out

    def render(out: dict[str, Any]) -> str:
        text = human(out)
        if "argv0_resolved" in out:
            text += (
                f"\nthe command's argv[0] {out['argv'][0]!r} resolves here to "
                f"{out['argv0_resolved']!r} (sandbox {out['sandbox']}); check that this is "
                "the interpreter with your test tools installed"
            )
        return text

    emit(run(as_json, act), as_json, render)


@operator_group.command("revoke")
@click.option("--registration", required=True, help="Registration ID.")
@click.option("--epoch", type=int, default=None, help="Epoch to revoke (default: newest).")
@click.option("--reason", required=True, help="Why (one line, for the audit).")
@data_dir_option
@json_option
def revoke_command(
    registration: str, epoch: int | None, reason: str, data_dir: Path | None, as_json: bool
) -> None:
    """Revoke an enrollment epoch: its evidence, even retained earlier, stops counting."""

    def act() -> dict[str, Any]:
        with _admin(data_dir) as admin:
            revocation = admin.revoke(
                registration_id=registration, reason=reason, registration_epoch=epoch
            )
        return {
            "registration_id": revocation.registration_id,
            "registration_epoch": revocation.registration_epoch,
            "revoked_at_ms": revocation.revoked_at_ms,
        }

    emit(run(as_json, act), as_json)


@operator_group.command("show")
@click.option("--repository", required=True, help="Repository ID.")
@click.option("--registration", multiple=True, help="Also list these registrations' epochs.")
@data_dir_option
@json_option
def show_command(
    repository: str, registration: tuple[str, ...], data_dir: Path | None, as_json: bool
) -> None:
    """Show a repository's registration, collector profiles and enrollment epochs."""

    def act() -> dict[str, Any]:
        with _admin(data_dir, create=False) as admin:
            view = admin.overview(repository, registration)
        repo = view.repository
        profiles = []
        for p in view.collector_profiles:
            row: dict[str, Any] = {
                "profile_id": p.profile_id,
                "step_id": p.step_id,
                "workflow_profile_id": p.workflow_profile_id,
                "registration": f"{p.registration_id}@{p.registration_epoch}",
                "current": p.superseded_at_ms is None,
                "kind": p.kind,
            }
            body = decode_collector_profile(p.profile)
            if isinstance(body, CommandCollectorProfile):
                here = runtime_here(
                    body.recipe, body.runtime_identity_sha256, isolation=body.isolation
                )
                row.update(
                    argv=list(body.recipe.argv),
                    argv0=body.recipe.argv[0],
                    argv0_resolved=here.executable,
                    runtime_matches_this_host=here.matches,
                )
            profiles.append(row)
        return {
            "repository_id": repo.repository_id,
            "workspace": repo.workspace,
            "work_tree": repo.work_tree,
            "policy_epoch": repo.policy_epoch,
            "collector_profiles": profiles,
            "registrations": {
                reg: [
                    {
                        "epoch": e.epoch,
                        "step_id": e.step_id,
                        "verification_key_id": e.verification_key_id,
                        "revoked": e.revoked,
                    }
                    for e in epochs
                ]
                for reg, epochs in ((r.registration_id, r.epochs) for r in view.registrations)
            },
        }

    emit(run(as_json, act), as_json)


def register(group: click.Group) -> None:
    """Add ``operator``."""
    group.add_command(operator_group)
