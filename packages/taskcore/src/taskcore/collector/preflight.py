"""Before a claim: check this machine can run the step's command the way its profile requires.

:func:`check_before_claim` reads the step's current command collector profile from the local
authority (``--data-dir``, read-only), plans the sandbox its isolation policy asks for, checks
that no read-only path would expose the collector's state, the data dir, the repository or
the home directory, and probes the runtime identity. Anything short of the profile is refused
here, before ``collector_claim``, so an unsandboxed or weaker run is never even started:

* ``ISOLATION_UNAVAILABLE``: a weaker sandbox than ``minimum_sandbox``, a limit this machine
  cannot enforce, an exposed path that does not exist;
* ``INVALID_VALUE``: an exposed path that would reveal a protected directory, or an
  executable the sandbox would hide;
* ``RUNTIME_MISMATCH``: the runtime identity (sandbox settings included) is not the pinned one.

``collect_command`` makes the same checks again after the claim, right before it runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from taskcore.collector.runtime import probe_runtime
from taskcore.collector.sandbox import check_exposure, protected_paths
from taskcore.collector.state import CollectorState
from taskcore.contract.collector import CommandCollectorProfile, decode_collector_profile
from taskcore.contract.collector_records import runtime_identity_digest
from taskcore.errors import ErrorCode, TaskError
from taskcore.workflow.reads import open_reader

__all__ = ["check_before_claim", "check_profile_here"]


def check_before_claim(
    data_dir: Path,
    *,
    repository: str,
    profile: str,
    step_id: str,
    state: CollectorState,
    env_source: Mapping[str, str] | None = None,
) -> None:
    """Refuse (see the module) unless this machine meets the step's command profile.

    A step without an installed command profile is left to the claim, which refuses it
    with its own error.
    """
    storage = open_reader(data_dir)
    try:
        with storage.read() as tx:
            record = tx.collector.current_profile(repository, profile, step_id)
            registered = tx.authority.get_repository(repository)
    finally:
        storage.close()
    if record is None:
        return
    installed = decode_collector_profile(json.loads(record.body))
    if not isinstance(installed, CommandCollectorProfile):
        return
    work_tree = Path(registered.work_tree) if registered is not None else None
    check_profile_here(
        installed, state=state, work_tree=work_tree, data_dir=data_dir, env_source=env_source
    )


def check_profile_here(
    installed: CommandCollectorProfile,
    *,
    state: CollectorState,
    work_tree: Path | None,
    data_dir: Path | None,
    env_source: Mapping[str, str] | None = None,
) -> None:
    """Refuse unless this machine can run ``installed`` as pinned: exposure, isolation, runtime.

    The part of :func:`check_before_claim` that needs only the profile (the same-host flow in
    :mod:`taskcore.collector.client` calls it after its own authority checks).
    """
    if installed.isolation is not None:
        check_exposure(
            installed.isolation,
            protected_paths(state=state.root, repository=work_tree, data_dir=data_dir),
        )
    identity = probe_runtime(installed.recipe, env_source=env_source, isolation=installed.isolation)
    if runtime_identity_digest(identity) != installed.runtime_identity_sha256:
        raise TaskError(
            ErrorCode.RUNTIME_MISMATCH,
            f"this machine's runtime is not the one collector profile {installed.profile_id!r} "
            f"pins: argv[0] {installed.recipe.argv[0][:200]!r} resolves here to "
            f"{identity.executable[:300]!r} (sandbox {identity.sandbox.value}); nothing was "
            "claimed or run. Compare 'agent-task collector runtime-probe' with 'agent-task "
            "operator show'",
        )
