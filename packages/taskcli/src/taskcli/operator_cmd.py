"""``agent-task operator ...``: the operator's trusted-local acts on the authority.

Every command opens the journal in ``--data-dir`` directly (the operator sits on the service
host); nothing goes over the network and no request body can name a path. See
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

import json
from pathlib import Path
from typing import Any, Literal

import attrs
import click
from taskcore import SystemClock, TaskError
from taskcore.authority import (
    RequirementStep,
    WorkflowRequirement,
    decode_requirement,
    enroll_executor,
    install_requirement,
    register_profile,
    register_repository,
    revoke_executor,
)
from taskcore.codec import default_codec, wire_field
from taskcore.collector.admin import install_collector_profile
from taskcore.collector.descriptor import collector_profile_digest
from taskcore.collector.records import runtime_identity_digest
from taskcore.collector.runtime import probe_runtime
from taskcore.collector.state import key_id_for
from taskcore.contract import (
    ActionClass,
    CommandCollectorProfile,
    CommandRecipe,
    CriterionMode,
    GraphStatus,
    TaskCriterion,
    WorkflowProgression,
    decode_collector_profile,
)
from taskcore.contract.common import digest_field, id_field
from taskcore.errors import ErrorCode
from taskcore.store import open_storage
from taskcore.store.storage import SqliteStorage

from taskcli.common import data_dir_option, emit, json_option, resolve_data_dir, run

__all__ = ["AgentTaskProfile", "OperatorConfig", "register"]


@click.group("operator")
def operator_group() -> None:
    """Operator acts on the authority (run on the service host, against --data-dir)."""


def _storage(data_dir: Path | None) -> SqliteStorage:
    return open_storage(resolve_data_dir(data_dir), create=True)


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
        storage = _storage(data_dir)
        try:
            record = register_repository(
                storage,
                SystemClock(),
                workspace=workspace,
                repository_id=repository,
                work_tree=path,
            )
        finally:
            storage.close()
        return {
            "repository_id": record.repository_id,
            "workspace": record.workspace,
            "work_tree": record.work_tree,
            "policy_epoch": record.policy_epoch,
        }

    emit(run(as_json, act), as_json)


def test_requirement(step_id: str, summary: str) -> WorkflowRequirement:
    """Return a requirement of one required TEST step that only a collector can satisfy."""
    return WorkflowRequirement(
        version=1,
        requirement_id=f"{step_id}-pass",
        summary=summary,
        steps=(
            RequirementStep(
                step_id=step_id,
                summary=summary,
                action_class=ActionClass.TEST,
                graph_status=GraphStatus.REQUIRED,
                progression=WorkflowProgression.COLLECTOR,
                depends_on=(),
                criteria=(
                    TaskCriterion(
                        criterion="tests_pass",
                        description="The pinned test command exits 0 on the exact revision.",
                        mode=CriterionMode.CONTROLLER_ONLY,
                        required=True,
                    ),
                ),
                references=(),
            ),
        ),
    )


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
            test_requirement(test_step, summary)
            if test_step is not None
            else decode_requirement(_read(file))  # type: ignore[arg-type]
        )
        storage = _storage(data_dir)
        try:
            installed = install_requirement(
                storage, SystemClock(), repository_id=repository, requirement=requirement
            )
        finally:
            storage.close()
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
        storage = _storage(data_dir)
        try:
            record = register_profile(
                storage,
                SystemClock(),
                repository_id=repository,
                profile_id=profile,
                target=target,
                requirement_digest=requirement,
            )
        finally:
            storage.close()
        return {
            "repository_id": record.repository_id,
            "profile_id": record.profile_id,
            "target": record.target,
            "requirement_digest": record.requirement_digest,
            "generation": record.generation,
        }

    emit(run(as_json, act), as_json)


# -- the agent_task_profiles config file ------------------------------------------------------


@attrs.frozen(kw_only=True)
class AgentTaskProfile:
    """One ``agent_task_profiles`` entry (seed: exactly these fields)."""

    repository_id: str = id_field()
    profile_id: str = id_field()
    native_repository: str = wire_field(min_len=1, max_len=4096)
    data_dir: str = wire_field(min_len=1, max_len=4096)
    target: str = wire_field(min_len=1, max_len=256)
    requirement_digest: str = digest_field()
    publish_forge_status: bool = wire_field(default=False)


@attrs.frozen(kw_only=True)
class OperatorConfig:
    """The strict version-1 execution config of a task-only deployment."""

    version: int = wire_field(version=True)
    workspace: str = id_field()
    agent_task_profiles: tuple[AgentTaskProfile, ...] = wire_field(min_len=1, max_len=64)
    kind: Literal["agent_task_profiles"] = wire_field(default="agent_task_profiles")


def apply_config(config: OperatorConfig, data_dir: Path) -> list[dict[str, Any]]:
    """Register every repository (once) and profile of ``config`` in ``data_dir``."""
    out = []
    storage = open_storage(data_dir, create=True)
    clock = SystemClock()
    try:
        for entry in config.agent_task_profiles:
            if (
                not Path(entry.data_dir).is_absolute()
                or not Path(entry.native_repository).is_absolute()
            ):
                raise TaskError(
                    ErrorCode.INVALID_PATH, "data_dir and native_repository must be absolute"
                )
            if Path(entry.data_dir).resolve() != data_dir.resolve():
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    f"profile {entry.profile_id!r} pins data_dir {entry.data_dir}; this command "
                    f"runs against {data_dir}. Run it with --data-dir {entry.data_dir}",
                )
            if entry.publish_forge_status:
                raise TaskError(
                    ErrorCode.INVALID_VALUE,
                    "publish_forge_status is not supported by this build; set it to false",
                )
            with storage.read() as tx:
                existing = tx.authority.get_repository(entry.repository_id)
            if existing is None:
                register_repository(
                    storage,
                    clock,
                    workspace=config.workspace,
                    repository_id=entry.repository_id,
                    work_tree=entry.native_repository,
                )
            elif Path(existing.work_tree) != Path(entry.native_repository).resolve():
                raise TaskError(
                    ErrorCode.CONFLICT,
                    f"repository {entry.repository_id!r} is registered at another path",
                )
            record = register_profile(
                storage,
                clock,
                repository_id=entry.repository_id,
                profile_id=entry.profile_id,
                target=entry.target,
                requirement_digest=entry.requirement_digest,
            )
            out.append(
                {
                    "repository_id": record.repository_id,
                    "profile_id": record.profile_id,
                    "generation": record.generation,
                }
            )
    finally:
        storage.close()
    return out


@operator_group.command("apply")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@data_dir_option
@json_option
def apply_command(config: Path, data_dir: Path | None, as_json: bool) -> None:
    """Apply a strict version-1 agent_task_profiles CONFIG (JSON) to --data-dir.

    Requirements must be installed first (the entries pin their digests).
    """

    def act() -> list[dict[str, Any]]:
        parsed = default_codec().decode(OperatorConfig, _read(config))
        return apply_config(parsed, resolve_data_dir(data_dir))

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
        if len(public_key) != 64:
            raise TaskError(ErrorCode.INVALID_VALUE, "the public key is 64 lowercase hex")
        storage = _storage(data_dir)
        try:
            enrollment = enroll_executor(
                storage,
                SystemClock(),
                registration_id=registration,
                executor_id=executor,
                repository_id=repository,
                step_id=step,
                verification_key_id=key_id_for(public_key),
                public_key=public_key,
            )
        finally:
            storage.close()
        return {
            "registration_id": enrollment.registration_id,
            "registration_epoch": enrollment.registration_epoch,
            "executor_id": enrollment.executor_id,
            "verification_key_id": enrollment.verification_key_id,
            "note": "enrollment grants no receipt; install a collector profile for this epoch",
        }

    emit(run(as_json, act), as_json)


def _current_epoch(data_dir: Path | None, registration: str) -> int:
    storage = _storage(data_dir)
    try:
        with storage.read() as tx:
            epochs = tx.authority.enrollments(registration)
    finally:
        storage.close()
    if not epochs:
        raise TaskError(ErrorCode.NOT_FOUND, f"no registration {registration!r}; enroll first")
    return epochs[-1].registration_epoch


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
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Install an immutable collector profile pinning a recipe and the runtime identity.

    Installing is a separate act from enrollment; a newer profile for the same repository,
    workflow profile and step supersedes the older one.
    """

    def act() -> dict[str, Any]:
        if file is not None:
            collector_profile = decode_collector_profile(json.loads(_read(file)))
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
            if missing or not argv:
                raise TaskError(
                    ErrorCode.BAD_INPUT,
                    f"give --file, or {', '.join(missing + ([] if argv else ['--arg']))}",
                )
            assert registration is not None
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
            pinned = runtime_identity or runtime_identity_digest(probe_runtime(recipe))
            collector_profile = CommandCollectorProfile(
                version=1,
                kind="command",
                profile_id=profile_id,  # type: ignore[arg-type]
                repository_id=repository,  # type: ignore[arg-type]
                workflow_profile_id=profile,  # type: ignore[arg-type]
                step_id=step,  # type: ignore[arg-type]
                registration_id=registration,
                registration_epoch=epoch or _current_epoch(data_dir, registration),
                recipe=recipe,
                runtime_identity_sha256=pinned,
            )
        storage = _storage(data_dir)
        try:
            record = install_collector_profile(storage, SystemClock(), profile=collector_profile)
        finally:
            storage.close()
        return {
            "profile_id": record.profile_id,
            "digest": collector_profile_digest(collector_profile),
            "repository_id": record.repository_id,
            "workflow_profile_id": record.workflow_profile_id,
            "step_id": record.step_id,
            "registration_id": record.registration_id,
            "registration_epoch": record.registration_epoch,
        }

    emit(run(as_json, act), as_json)


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
        storage = _storage(data_dir)
        try:
            revocation = revoke_executor(
                storage,
                SystemClock(),
                registration_id=registration,
                reason=reason,
                registration_epoch=epoch,
            )
        finally:
            storage.close()
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
        storage = open_storage(resolve_data_dir(data_dir))
        try:
            with storage.read() as tx:
                repo = tx.authority.get_repository(repository)
                if repo is None:
                    raise TaskError(ErrorCode.NOT_FOUND, f"no repository {repository!r}")
                profiles = tx.collector.profiles(repository)
                epochs = {
                    reg: [
                        {
                            "epoch": e.registration_epoch,
                            "step_id": e.step_id,
                            "verification_key_id": e.verification_key_id,
                            "revoked": any(
                                r.registration_epoch == e.registration_epoch
                                for r in tx.authority.revocations(reg)
                            ),
                        }
                        for e in tx.authority.enrollments(reg)
                    ]
                    for reg in registration
                }
        finally:
            storage.close()
        return {
            "repository_id": repo.repository_id,
            "workspace": repo.workspace,
            "work_tree": repo.work_tree,
            "policy_epoch": repo.policy_epoch,
            "collector_profiles": [
                {
                    "profile_id": p.profile_id,
                    "step_id": p.step_id,
                    "workflow_profile_id": p.workflow_profile_id,
                    "registration": f"{p.registration_id}@{p.registration_epoch}",
                    "current": p.superseded_at_ms is None,
                }
                for p in profiles
            ],
            "registrations": epochs,
        }

    emit(run(as_json, act), as_json)


def register(group: click.Group) -> None:
    """Add ``operator``."""
    group.add_command(operator_group)
