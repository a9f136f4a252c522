"""``agent-task collector keygen|runtime-probe|status``: the collector's local state.

``keygen`` writes the Ed25519 private seed into the owner-private state directory
(``--state-dir``, default ``$AGENT_TASK_COLLECTOR_DIR`` or ``~/.local/share/agent-task/
collector``) and prints only the public key and its key ID, which the operator enrolls.
``runtime-probe`` prints the runtime identity this machine gives a recipe, which a command
collector profile pins. ``status`` lists the attempts this collector claimed and their state.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from taskcore.codec import default_codec
from taskcore.collector.launchcheck import check_launch, interpreter_paths
from taskcore.collector.runtime import probe_runtime
from taskcore.collector.sandbox import isolation_policy
from taskcore.collector.state import CollectorState, collector_status
from taskcore.contract import CommandRecipe, IsolationPolicy, NetworkAccess, SandboxMode
from taskcore.contract.collector_records import runtime_identity_digest
from taskcore.errors import ErrorCode, TaskError

from taskcli.common import emit, json_option, run

__all__ = ["isolation_options", "register", "resolve_isolation", "state_dir_option"]

state_dir_option = click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="AGENT_TASK_COLLECTOR_DIR",
    help="Collector state directory [env AGENT_TASK_COLLECTOR_DIR; default "
    "~/.local/share/agent-task/collector].",
)


_F = TypeVar("_F", bound=Callable[..., Any])


def isolation_options(fn: _F) -> _F:
    """Add the isolation policy options (``--sandbox-minimum`` .. ``--read-only-path``).

    The command receives them as one ``isolation`` mapping of wire names to values, for
    :func:`taskcore.collector.sandbox.isolation_policy` (``None`` when none is given).
    """
    options = [
        click.option(
            "--sandbox-minimum",
            type=click.Choice([m.value for m in SandboxMode]),
            default=None,
            help="Weakest sandbox the profile accepts (bwrap > netns > none).",
        ),
        click.option(
            "--network",
            type=click.Choice([n.value for n in NetworkAccess]),
            default=None,
            help="Whether the command may reach a network [default: none].",
        ),
        click.option("--memory-limit", type=int, default=None, help="Memory limit, bytes."),
        click.option("--process-limit", type=int, default=None, help="Process limit."),
        click.option(
            "--output-cap",
            type=int,
            default=None,
            help="stdout+stderr bytes after which the command is killed [default: 64 MiB].",
        ),
        click.option(
            "--tmp-size", type=int, default=None, help="Private /tmp size, bytes [256 MiB]."
        ),
        click.option(
            "--read-only-path",
            multiple=True,
            help="Host path (a toolchain, a venv) the sandbox shows read-only (repeat).",
        ),
        click.option(
            "--expose-interpreter",
            is_flag=True,
            help="Also show read-only the virtualenv of a Python argv[0] (or of the interpreter "
            "its #! line names) and the installation it was made from.",
        ),
    ]

    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        sandbox_minimum: str | None,
        network: str | None,
        memory_limit: int | None,
        process_limit: int | None,
        output_cap: int | None,
        tmp_size: int | None,
        read_only_path: tuple[str, ...],
        expose_interpreter: bool,
        **kwargs: Any,
    ) -> Any:
        overrides = {
            "minimum_sandbox": sandbox_minimum,
            "network": network,
            "memory_limit_bytes": memory_limit,
            "process_limit": process_limit,
            "output_cap_bytes": output_cap,
            "tmp_size_bytes": tmp_size,
            "read_only_paths": read_only_path,
            _EXPOSE_INTERPRETER: expose_interpreter,
        }
        return fn(*args, isolation=overrides, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


_EXPOSE_INTERPRETER = "expose_interpreter"
"""The ``--expose-interpreter`` flag among the isolation options (not a wire name)."""


def resolve_isolation(
    options: dict[str, Any], argv: tuple[str, ...], allow_env: tuple[str, ...]
) -> IsolationPolicy | None:
    """The isolation policy of :func:`isolation_options`' values for the command ``argv``.

    ``--expose-interpreter`` adds :func:`~taskcore.collector.launchcheck.interpreter_paths`
    of ``argv[0]`` (resolved with the allow-listed environment, as a collection resolves it)
    to ``--read-only-path``. Call it where errors are reported (inside ``run``).
    """
    overrides = dict(options)
    paths = tuple(overrides.get("read_only_paths") or ())
    if overrides.pop(_EXPOSE_INTERPRETER, False):
        if not argv:
            raise TaskError(ErrorCode.BAD_INPUT, "--expose-interpreter needs the command (--arg)")
        env = {name: os.environ[name] for name in allow_env if name in os.environ}
        paths += tuple(p for p in interpreter_paths(argv[0], env=env) if p not in paths)
    overrides["read_only_paths"] = paths
    return isolation_policy(overrides)


@click.group("collector")
def collector_group() -> None:
    """The local collector: signing key, runtime identity, retained transfers."""


@collector_group.command("keygen")
@state_dir_option
@json_option
def keygen_command(state_dir: Path | None, as_json: bool) -> None:
    """Create the collector's signing key; print only its public key.

    The private seed stays in the owner-private state directory; an existing key is never
    replaced.
    """

    def act() -> dict[str, Any]:
        state = CollectorState.open(state_dir, create=True)
        key = state.generate_key()
        return {
            "public_key": key.public_key,
            "key_id": key.key_id,
            "state_dir": str(state.root),
        }

    result = run(as_json, act)
    if as_json:
        emit(result, True)
    else:
        click.echo(result["public_key"])
        click.echo(
            f"key id {result['key_id']}; private seed kept in {result['state_dir']}. Enroll it "
            "with 'agent-task operator enroll --public-key <the key above> ...'",
            err=True,
        )


@collector_group.command("pin-authority")
@click.option(
    "--public-key", required=True, help="The authority's key (64 hex), from the operator."
)
@click.option("--audience", required=True, help="The authority's audience, from the operator.")
@state_dir_option
@json_option
def pin_authority_command(
    public_key: str, audience: str, state_dir: Path | None, as_json: bool
) -> None:
    """Trust one authority for remote collection (--clone): its key and audience, once.

    'agent-task operator enroll' (or 'operator authority') prints both on the service host.
    A remote collection accepts only descriptors this key signed; pinning another key in
    the same state directory is refused.
    """

    def act() -> dict[str, Any]:
        state = CollectorState.open(state_dir)
        pinned = state.pin_authority(public_key=public_key, audience=audience)
        return {
            "public_key": pinned.public_key,
            "key_id": pinned.key_id,
            "audience": pinned.audience,
            "state_dir": str(state.root),
        }

    emit(
        run(as_json, act),
        as_json,
        lambda v: (
            f"trusting authority key {v['key_id']} (audience {v['audience']}) in {v['state_dir']}"
        ),
    )


@collector_group.command("runtime-probe")
@click.option("--arg", "argv", multiple=True, required=True, help="One argv item (repeat).")
@click.option("--workdir", default=".", show_default=True)
@click.option("--allow-env", multiple=True, help="Environment name passed through (repeat).")
@click.option("--timeout-ms", type=int, default=600_000, show_default=True)
@click.option("--output-limit", type=int, default=1 << 20, show_default=True)
@isolation_options
@json_option
def runtime_probe_command(
    argv: tuple[str, ...],
    workdir: str,
    allow_env: tuple[str, ...],
    timeout_ms: int,
    output_limit: int,
    isolation: dict[str, Any],
    as_json: bool,
) -> None:
    """Print the runtime identity this machine gives a recipe (what a profile pins).

    The identity names the sandbox and its settings under the given isolation options. The
    command's argv[0] is started in that sandbox first (as 'operator install-collector-profile'
    does on the collector's own host): a command that could not start there is refused, saying
    what to expose.
    """

    def act() -> dict[str, Any]:
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
        policy = resolve_isolation(isolation, argv, allow_env)
        check_launch(recipe, isolation=policy)
        identity = probe_runtime(recipe, isolation=policy)
        return {
            "runtime_identity_sha256": runtime_identity_digest(identity),
            "identity": json.loads(default_codec().dumps(identity)),
        }

    emit(run(as_json, act), as_json)


@collector_group.command("status")
@state_dir_option
@json_option
def status_command(state_dir: Path | None, as_json: bool) -> None:
    """List the attempts this collector claimed, with their state.

    States: claimed (a collection holds it, or died holding it), released (a failure after
    the claim reconciled it), upload_pending (signed and retained; run 'agent-task
    retry-upload'), uploaded (with the run's outcome). Retained attempt directories without a
    claim record (made before this listing existed) are listed too.
    """

    def act() -> dict[str, Any]:
        state = CollectorState.open(state_dir)
        return {"state_dir": str(state.root), "attempts": collector_status(state)}

    def table(value: dict[str, Any]) -> str:
        rows = value["attempts"]
        if not rows:
            return f"no attempts in {value['state_dir']}"
        lines = [f"{'ATTEMPT':<36}  {'CHANGE':<16}  {'STEP':<12}  {'STATE':<14}  DETAIL"]
        for r in rows:
            detail = r.get("outcome") or r.get("note") or ""
            if r.get("attempt_dir") and r["state"] == "upload_pending":
                detail = f"retry-upload --attempt {r['attempt_dir']}"
            lines.append(
                f"{r.get('attempt_id') or '-'!s:<36}  {str(r.get('change_id') or '-')[:16]:<16}  "
                f"{str(r.get('step_id') or '-')[:12]:<12}  {r['state']:<14}  {detail}"
            )
        return "\n".join(lines)

    emit(run(as_json, act), as_json, table)


def register(group: click.Group) -> None:
    """Add ``collector``."""
    group.add_command(collector_group)
