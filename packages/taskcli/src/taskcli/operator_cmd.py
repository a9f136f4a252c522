"""``agent-task operator ...``: the operator's trusted-local acts on the authority.

Every command is one ``operator.*`` operation on the journal in ``--data-dir``, called in
process through :class:`taskcore.operator_ops.AuthorityAdmin` (the operator sits on the
service host): checked, run in one transaction and audited once like every call, refused
ones included. No network door offers these operations, so no request body can name a path.
The commands are generated from the operations' input types (:mod:`taskcli.generate`), with
the flag spellings they always had as aliases, and print the operation's wire answer
(``--json``: as is; else readably, with what a person checks next). See
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
from collections.abc import Callable
from typing import Any

import click
from taskcore import TaskError
from taskcore.authority.operator import collector_test_requirement, runtime_here
from taskcore.canonical import canonical_json
from taskcore.codec import default_codec
from taskcore.contract import CommandCollectorProfile, CommandRecipe, decode_collector_profile
from taskcore.errors import ErrorCode
from taskcore.operator_ops import AuthorityAdmin, operator_registry
from taskcore.service import Operation

from taskcli.admin_cmd import OAUTH_PREFIX, TOKEN_PREFIX
from taskcli.collector_cmd import isolation_options, resolve_isolation
from taskcli.common import data_dir_option, human, resolve_data_dir
from taskcli.generate import Call, Shape, command_name, operation_command

__all__ = ["OPERATOR_COMMANDS", "operator_group", "register"]

Compose = Callable[[AuthorityAdmin, dict[str, Any], dict[str, Any]], dict[str, Any]]
"""Fills a request from a command's own options (a local convenience, e.g. a probe)."""


@click.group("operator")
def operator_group() -> None:
    """Operator acts on the authority (run on the service host, against --data-dir)."""


def _tree(value: Any) -> Any:
    return json.loads(canonical_json(value))


# -- how the commands spell the acts (presentation; the fields are operator_types') ----------

_NAMES = {"operator.apply_config": "apply"}
"""Command names other than the act's own (``apply_config`` -> ``apply``)."""

_CREATES = frozenset({"operator.register_repository", "operator.apply_config"})
"""The acts that may create the data dir (the first acts of a set-up)."""

_REPOSITORY = {"repository_id": ("--repository",)}
_SHAPES: dict[str, Shape] = {
    "operator.register_repository": Shape(argument="work_tree", aliases=_REPOSITORY),
    "operator.install_requirement": Shape(
        argument="requirement",
        argument_required=False,
        files=frozenset({"requirement"}),
        optional=frozenset({"requirement"}),
        aliases=_REPOSITORY,
    ),
    "operator.register_profile": Shape(
        aliases={
            **_REPOSITORY,
            "profile_id": ("--profile",),
            "requirement_digest": ("--requirement",),
        }
    ),
    "operator.apply_config": Shape(argument="config", files=frozenset({"config"})),
    "operator.enroll": Shape(
        aliases={
            **_REPOSITORY,
            "registration_id": ("--registration",),
            "executor_id": ("--executor",),
            "step_id": ("--step",),
        }
    ),
    "operator.install_collector_profile": Shape(
        names={"profile": ("--file",)},
        files=frozenset({"profile"}),
        optional=frozenset({"profile"}),
    ),
    "operator.revoke": Shape(
        aliases={"registration_id": ("--registration",), "registration_epoch": ("--epoch",)}
    ),
    "operator.show": Shape(aliases={**_REPOSITORY, "registrations": ("--registration",)}),
}


# -- install-requirement: a FILE, or one required TEST step (--test-step) ------------------


_requirement_options = (
    click.option(
        "--test-step",
        default=None,
        metavar="STEP",
        help="Install one required TEST step STEP, satisfied only by a collector.",
    ),
    click.option("--summary", default="The tests pass on the exact revision.", show_default=True),
)


def _compose_requirement(
    admin: AuthorityAdmin, body: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    test_step, summary = options["test_step"], options["summary"]
    if ("requirement" in body) == (test_step is not None):
        raise TaskError(ErrorCode.BAD_INPUT, "give a requirement FILE or --test-step, not both")
    if test_step is not None:
        body["requirement"] = _tree(collector_test_requirement(test_step, summary))
    return body


# -- install-collector-profile: --file, or a command recipe built here -----------------------


_profile_options = (
    click.option("--profile-id", default=None, help="ID of the new (immutable) collector profile."),
    click.option("--repository", default=None, help="Repository ID."),
    click.option("--profile", "workflow_profile", default=None, help="Workflow (task) profile ID."),
    click.option("--step", default=None, help="Step ID."),
    click.option("--registration", default=None, help="Registration ID."),
    click.option("--epoch", type=int, default=None, help="Registration epoch (default: newest)."),
    click.option("--arg", "argv", multiple=True, help="One argv item of the command (repeat)."),
    click.option(
        "--workdir", default=".", show_default=True, help="Working directory in the tree."
    ),
    click.option("--allow-env", multiple=True, help="Environment name passed through (repeat)."),
    click.option("--timeout-ms", type=int, default=600_000, show_default=True),
    click.option(
        "--output-limit",
        type=int,
        default=1 << 20,
        show_default=True,
        help="Retained output bound, bytes.",
    ),
    click.option(
        "--runtime-identity",
        default=None,
        help="Pinned runtime identity (64 hex); default: probe this machine now.",
    ),
    isolation_options,
)


def _compose_profile(
    admin: AuthorityAdmin, body: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    """The collector profile of the recipe options, pinning this machine's probed runtime."""
    if "profile" in body:
        return body
    given = {
        "--profile-id": options["profile_id"],
        "--repository": options["repository"],
        "--profile": options["workflow_profile"],
        "--step": options["step"],
        "--registration": options["registration"],
        "--arg": options["argv"],
    }
    missing = [flag for flag, value in given.items() if not value]
    if missing:
        raise TaskError(ErrorCode.BAD_INPUT, f"give --file, or {', '.join(missing)}")
    recipe = default_codec().structure(
        {
            "argv": list(options["argv"]),
            "working_directory": options["workdir"],
            "environment_allowlist": list(options["allow_env"]),
            "timeout_ms": options["timeout_ms"],
            "output_limit_bytes": options["output_limit"],
        },
        CommandRecipe,
    )
    profile = admin.command_collector_profile(
        profile_id=options["profile_id"],
        repository_id=options["repository"],
        workflow_profile_id=options["workflow_profile"],
        step_id=options["step"],
        registration_id=options["registration"],
        recipe=recipe,
        registration_epoch=options["epoch"],
        runtime_identity=options["runtime_identity"],
        isolation=resolve_isolation(options["isolation"], options["argv"], options["allow_env"]),
    )
    body["profile"] = _tree(profile)
    return body


# -- readable answers: the wire answer, then what the operator checks next -------------------


def _pin_line(authority: dict[str, Any]) -> str:
    return (
        "on a remote collector: agent-task collector pin-authority --public-key "
        f"{authority['public_key']} --audience {authority['audience']}"
    )


def _runtime_line(view: dict[str, Any]) -> str | None:
    """What a command profile's argv[0] resolves to here, probed now (not part of the act)."""
    try:
        body = decode_collector_profile(str(view["profile"]).encode("utf-8"))
        if not isinstance(body, CommandCollectorProfile):
            return None
        here = runtime_here(body.recipe, body.runtime_identity_sha256, isolation=body.isolation)
    except TaskError as err:
        return f"{view['profile_id']}: cannot probe its runtime here ({err.describe()})"
    return (
        f"{view['profile_id']}: the command's argv[0] {body.recipe.argv[0]!r} resolves here to "
        f"{here.executable!r} (sandbox {here.sandbox}; runtime matches this host: "
        f"{'yes' if here.matches else 'no'}); check that this is the interpreter with your "
        "test tools installed"
    )


def _with_lines(text: str, lines: list[str | None]) -> str:
    return "\n".join([text, *(line for line in lines if line)])


def _render_enrolled(answer: Any) -> str:
    note = "enrollment grants no receipt; install a collector profile for this epoch"
    return _with_lines(human(answer), [note, _pin_line(answer["authority"])])


def _render_authority(answer: Any) -> str:
    return _with_lines(human(answer), [_pin_line(answer)])


def _render_installed(answer: Any) -> str:
    return _with_lines(human(answer), [_runtime_line(answer["profile"])])


def _render_overview(answer: Any) -> str:
    return _with_lines(
        human(answer), [_runtime_line(view) for view in answer["collector_profiles"]]
    )


_EXTRAS: dict[str, tuple[tuple[Callable[[Any], Any], ...], Compose]] = {
    "operator.install_requirement": (_requirement_options, _compose_requirement),
    "operator.install_collector_profile": (_profile_options, _compose_profile),
}
_RENDER: dict[str, Callable[[Any], str]] = {
    "operator.enroll": _render_enrolled,
    "operator.authority": _render_authority,
    "operator.install_collector_profile": _render_installed,
    "operator.show": _render_overview,
}


def _caller(name: str, compose: Compose | None) -> Call:
    def call(body: dict[str, Any], options: dict[str, Any]) -> Any:
        directory = resolve_data_dir(options.pop("data_dir"))
        with AuthorityAdmin(directory, create=name in _CREATES) as admin:
            if compose is not None:
                body = compose(admin, body, options)
            return admin.answer(name, json.dumps(body, ensure_ascii=False).encode("utf-8"))

    return call


def _command(op: Operation[Any, Any]) -> click.Command:
    extras, compose = _EXTRAS.get(op.name, ((), None))
    return operation_command(
        op,
        OPERATOR_COMMANDS[op.name],
        _caller(op.name, compose),
        shape=_SHAPES.get(op.name, Shape()),
        render=_RENDER.get(op.name),
        options=(*extras, data_dir_option),
    )


OPERATOR_COMMANDS: dict[str, str] = {
    op.name: _NAMES.get(op.name, command_name(op.name.removeprefix("operator.")))
    for op in operator_registry()
    if not op.name.startswith((TOKEN_PREFIX, OAUTH_PREFIX))
}
"""``operator.<act>`` -> its ``agent-task operator`` command (token and OAuth acts are
``admin token`` and ``admin oauth``)."""

for _op in operator_registry():
    if _op.name in OPERATOR_COMMANDS:
        operator_group.add_command(_command(_op))


def register(group: click.Group) -> None:
    """Add ``operator``."""
    group.add_command(operator_group)
