"""The strict version-1 ``agent_task_profiles`` config of a task-only deployment.

``agent-task operator apply CONFIG`` decodes the file strictly (:func:`decode_config`: an
unknown field, a wrong type or another version is refused with its path) and registers every
repository (once) and task-only profile it names (:func:`apply_config`). Each entry pins the
data dir it belongs to; requirements are installed first, since entries pin their digests.
An entry with ``publish_forge_status: true`` needs a ``forge_status`` entry for its repository
(:class:`~taskcore.evidence.forge.ForgeStatusConfig`: GitHub or GitLab, API base URL, project,
the token *file*); the entries themselves keep exactly the seed's fields.

>>> config = decode_config(b'''{"version": 1, "workspace": "w1", "agent_task_profiles": [
...     {"repository_id": "acme", "profile_id": "default", "native_repository": "/src/acme",
...      "data_dir": "/var/lib/agent-task", "target": "main", "requirement_digest": "%s"}]}'''
...     % (b"a" * 64))
>>> entry = config.agent_task_profiles[0]
>>> entry.profile_id, entry.publish_forge_status, config.kind
('default', False, 'agent_task_profiles')
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import attrs

from taskcore.authority.admin import register_profile, register_repository
from taskcore.clock import Clock
from taskcore.codec import default_codec, wire_field
from taskcore.contract.common import digest_field, id_field, repository_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.forge import ForgeStatusConfig, apply_forge_settings
from taskcore.store.authority_api import ProfileRecord
from taskcore.store.storage import Storage

__all__ = ["AgentTaskProfile", "OperatorConfig", "apply_config", "decode_config"]


@attrs.frozen(kw_only=True)
class AgentTaskProfile:
    """One ``agent_task_profiles`` entry (seed: exactly these fields)."""

    repository_id: str = repository_field()
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
    forge_status: tuple[ForgeStatusConfig, ...] = wire_field(default=(), max_len=64)
    kind: Literal["agent_task_profiles"] = wire_field(default="agent_task_profiles")


def decode_config(data: bytes) -> OperatorConfig:
    """Decode an :class:`OperatorConfig` strictly from JSON bytes."""
    return default_codec().decode(OperatorConfig, data)


def apply_config(
    storage: Storage, clock: Clock, config: OperatorConfig, *, data_dir: Path
) -> tuple[ProfileRecord, ...]:
    """Register every repository (once) and profile of ``config``; return the profiles.

    ``data_dir`` is the data dir ``storage`` lives in: an entry pinning another one is
    ``INVALID_VALUE``. ``publish_forge_status: true`` needs exactly one ``forge_status`` entry
    for the repository, and every ``forge_status`` entry must serve a publishing profile
    (``INVALID_VALUE``); forge entries are checked before anything is applied. Paths must be
    absolute (``INVALID_PATH``); a repository already registered at another path is a
    ``CONFLICT``. Entries are applied in order, each in its own transactions; a profile's
    forge settings are written (publishing) or removed (not publishing) with it.
    """
    forges: dict[str, ForgeStatusConfig] = {}
    for forge_entry in config.forge_status:
        if forge_entry.repository_id in forges:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"repository {forge_entry.repository_id!r} has two forge_status entries",
            )
        forge_entry.check()
        forges[forge_entry.repository_id] = forge_entry
    publishing = {e.repository_id for e in config.agent_task_profiles if e.publish_forge_status}
    unused = sorted(set(forges) - publishing)
    if unused:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"forge_status for {', '.join(unused)} serves no profile with "
            "publish_forge_status: true",
        )
    missing = sorted(publishing - set(forges))
    if missing:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"publish_forge_status: true needs a forge_status entry for {', '.join(missing)}",
        )
    out = []
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
        out.append(
            register_profile(
                storage,
                clock,
                repository_id=entry.repository_id,
                profile_id=entry.profile_id,
                target=entry.target,
                requirement_digest=entry.requirement_digest,
            )
        )
        apply_forge_settings(
            storage,
            clock,
            workspace=config.workspace,
            repository_id=entry.repository_id,
            profile_id=entry.profile_id,
            config=forges[entry.repository_id] if entry.publish_forge_status else None,
        )
    return tuple(out)
