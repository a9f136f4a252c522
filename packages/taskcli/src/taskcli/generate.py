"""Click commands generated from registry operations: one option per field of the input type.

The operation's attrs input type decides what the command takes; this module only enumerates
its fields and spells each one for the command line, the way the MCP adapter spells them as
an ``inputSchema``:

* the flag is the wire key in kebab case (``lastError`` -> ``--last-error``,
  ``repository_id`` -> ``--repository-id``); a command may add older spellings as aliases
  (:class:`Shape`);
* the type comes from the annotation: ``str``, ``int`` (bounded by the field's ``lo``/``hi``),
  ``float``, ``bool`` (``--x/--no-x``; ``--x true|false`` when required), a ``Literal`` or a string enum (a choice),
  ``tuple[str, ...]`` (the option repeated); anything else (``Any``, an object, an array of
  objects) is one JSON value given inline, as ``@FILE`` or as ``-`` (stdin);
* a field without a default is required, a field with one is optional and left out of the
  request when not given (the service applies its default, shown in the help);
* the help is the field's ``doc`` (:func:`taskcore.wirefield.wire_field`).

A command may take one field as a positional argument (``queue get TASK_ID``) and may read a
JSON field from a file path (``operator apply CONFIG``). The request is the JSON object of the
given fields, sent as is: the service decodes it strictly, so the command holds no rule of
its own. This module imports attrs and the registry types, so only the command modules that
generate commands (``queue``, ``operator``, ``admin``) import it, when those commands run.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import attrs
import click
from taskcore.errors import ErrorCode, TaskError
from taskcore.jsontext import parse_json
from taskcore.limits import U64_MAX
from taskcore.service import Operation
from taskcore.wirefield import field_rules, wire_name

from taskcli.common import emit, json_option, read_json_argument, run

__all__ = [
    "JSON_METAVAR",
    "Call",
    "FieldParam",
    "Shape",
    "command_name",
    "field_params",
    "flag_name",
    "operation_command",
    "request_body",
]

JSON_METAVAR = "JSON|@FILE|-"
"""How a JSON-valued option is given: inline, from a file, or from stdin."""

Call = Callable[[dict[str, Any], dict[str, Any]], Any]
"""Runs the operation: ``(request, other options) -> the wire answer`` (a JSON value)."""

_RESERVED = frozenset({"as_json", "url", "token_file", "data_dir"})
_NONE = type(None)


def flag_name(wire: str) -> str:
    """The flag of a wire key: kebab case.

    >>> flag_name("lastError"), flag_name("repository_id"), flag_name("olderThanDays")
    ('--last-error', '--repository-id', '--older-than-days')
    """
    return "--" + re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", wire).lower().replace("_", "-")


def command_name(local: str) -> str:
    """The command of an operation's local name (without its family prefix).

    >>> command_name("claimNext"), command_name("checkpoint.write"), command_name("token_list")
    ('claim-next', 'checkpoint-write', 'token-list')
    """
    return flag_name(local.replace(".", "-")).removeprefix("--")


@dataclass(frozen=True)
class Shape:
    """How one command spells its operation's fields (presentation only, never a rule).

    ``argument`` is the field taken positionally (``argument_required`` overrides whether it
    must be given); ``aliases`` adds older flag spellings to a field's generated flag;
    ``names`` replaces a field's flags outright; ``files`` are JSON fields given as a path to
    a file; ``optional`` are required fields another option of the command may supply instead
    (the command's own ``call`` fills them in before sending).
    """

    argument: str | None = None
    argument_required: bool | None = None
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    files: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FieldParam:
    """One field of an input type on the command line.

    ``kind`` is ``value`` (a scalar or a choice), ``flag`` (a boolean), ``many`` (a repeated
    option for ``tuple[str, ...]``), ``json`` (one JSON value) or ``file`` (a JSON file).
    """

    name: str
    wire: str
    kind: str
    required: bool
    param: click.Parameter


def _unwrap(tp: Any) -> Any:
    """``X`` for ``X | None``; ``Any`` for a union of several types (given as JSON)."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not _NONE]
        return options[0] if len(options) == 1 else Any
    return tp


def _scalar_type(tp: Any, lo: int | None, hi: int | None) -> click.ParamType[Any] | None:
    if tp is str:
        return click.STRING
    if tp is int:
        return click.IntRange(min=lo, max=None if hi == U64_MAX else hi)
    if tp is float:
        return click.FLOAT
    if get_origin(tp) is Literal and all(isinstance(v, str) for v in get_args(tp)):
        return click.Choice(list(get_args(tp)))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        if all(isinstance(v, str) for v in values):
            return click.Choice(values)
    return None


def _kind(tp: Any, lo: int | None, hi: int | None) -> tuple[str, click.ParamType[Any]]:
    if tp is bool:
        return "flag", click.BOOL
    scalar = _scalar_type(tp, lo, hi)
    if scalar is not None:
        return "value", scalar
    if get_origin(tp) is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis and args[0] is str:
            return "many", click.STRING
    return "json", click.STRING


def _default_text(attribute: attrs.Attribute[Any]) -> str | None:
    default = attribute.default
    if default is attrs.NOTHING or default is None or isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return None
    if isinstance(default, enum.Enum):
        default = default.value
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, str):
        return default or "empty"
    return str(default)


def field_params(input_type: type[Any], shape: Shape = Shape()) -> list[FieldParam]:
    """One click parameter per field of ``input_type`` (an attrs wire type), in field order."""
    if not attrs.has(input_type):
        raise TypeError(f"{input_type!r} is not an attrs input type")
    attrs.resolve_types(input_type)
    known = {a.name for a in attrs.fields(input_type)}
    unknown = (
        ({shape.argument} - {None})
        | set(shape.aliases)
        | set(shape.names)
        | set(shape.files)
        | set(shape.optional)
    ) - known
    if unknown:
        raise ValueError(f"{input_type.__name__} has no field {sorted(map(str, unknown))}")
    out: list[FieldParam] = []
    for attribute in attrs.fields(input_type):
        name = attribute.name
        if name in _RESERVED:
            raise ValueError(f"field {name!r} of {input_type.__name__} clashes with an option")
        rules = field_rules(attribute)
        wire = wire_name(attribute)
        tp = _unwrap(attribute.type)
        kind, click_type = _kind(tp, rules.lo, rules.hi)
        if name in shape.files:
            kind = "file"
        required = attribute.default is attrs.NOTHING and name not in shape.optional
        help_text = rules.doc or ""
        param: click.Parameter
        if name == shape.argument:
            if kind in ("many", "flag"):
                raise ValueError(f"field {name!r} cannot be positional")
            metavar = "FILE" if kind == "file" else name.upper()
            param = click.Argument(
                [name],
                type=click_type,
                required=required if shape.argument_required is None else shape.argument_required,
                metavar=metavar,
            )
        else:
            decls = list(shape.names.get(name, (flag_name(wire), *shape.aliases.get(name, ()))))
            default_text = _default_text(attribute)
            common: dict[str, Any] = {
                "required": required,
                "help": help_text or None,
                "show_default": default_text if default_text is not None else False,
            }
            if kind == "flag" and required:
                # click treats a flag pair as given (false) when absent: a required boolean
                # takes a value (true/false) so leaving it out is refused.
                param = click.Option([*decls, name], type=click.BOOL, **common)
            elif kind == "flag":
                primary = decls[0].removeprefix("--")
                param = click.Option(
                    [f"--{primary}/--no-{primary}", *decls[1:], name], default=None, **common
                )
            elif kind == "many":
                param = click.Option([*decls, name], type=click_type, multiple=True, **common)
            else:
                metavar = {"json": JSON_METAVAR, "file": "FILE"}.get(kind)
                param = click.Option([*decls, name], type=click_type, metavar=metavar, **common)
        out.append(FieldParam(name=name, wire=wire, kind=kind, required=required, param=param))
    return out


def _read_file(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TaskError(ErrorCode.BAD_INPUT, f"cannot read {path}: {exc.strerror}") from None


def request_body(fields: Sequence[FieldParam], values: Mapping[str, Any]) -> dict[str, Any]:
    """The request object of the given values: wire keys, absent ones left out.

    A JSON field's text is parsed (``MALFORMED_JSON`` when it is not JSON); nothing else is
    checked here: the service decodes the request strictly.
    """
    body: dict[str, Any] = {}
    for spec in fields:
        value = values.get(spec.name)
        if value is None or (spec.kind == "many" and not value):
            continue
        if spec.kind == "json":
            value = parse_json(read_json_argument(value))
        elif spec.kind == "file":
            value = parse_json(_read_file(value))
        elif spec.kind == "many":
            value = list(value)
        body[spec.wire] = value
    return body


def operation_command(
    op: Operation[Any, Any],
    name: str,
    call: Call,
    *,
    shape: Shape = Shape(),
    render: Callable[[Any], str] | None = None,
    options: Iterable[Callable[[Any], Any]] = (),
    help_text: str | None = None,
) -> click.Command:
    """The click command ``name`` for ``op``: its fields, then ``options``, then ``--json``.

    ``options`` are click decorators (``client_options``, ``data_dir_option``, a command's
    own extras); their values reach ``call`` as its second argument. The answer ``call``
    returns is printed with ``--json`` as compact JSON, else through ``render`` (default:
    readable ``key: value`` lines); a refusal exits with its kind's status.
    """
    fields = field_params(op.input_type, shape)
    names = {f.name for f in fields}

    def callback(**kwargs: Any) -> None:
        as_json = bool(kwargs.pop("as_json"))
        values = {key: kwargs.pop(key) for key in names}
        emit(run(as_json, lambda: call(request_body(fields, values), kwargs)), as_json, render)

    fn: Any = json_option(callback)
    for decorate in reversed(list(options)):
        fn = decorate(fn)
    text = help_text or f"{op.description_text}\n\n({op.name})"
    command = click.command(name, help=text, short_help=op.summary)(fn)
    clash = names & {p.name for p in command.params}
    if clash:
        raise ValueError(f"fields {sorted(map(str, clash))} of {op.name} clash with options")
    command.params[:0] = [f.param for f in fields]
    return command
