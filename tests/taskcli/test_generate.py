"""taskcli.generate: click parameters from attrs input types, and commands around them."""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

import attrs
import click
import pytest
from click.testing import CliRunner
from taskcli.generate import (
    JSON_METAVAR,
    Shape,
    field_params,
    flag_name,
    operation_command,
    request_body,
)
from taskcore import RiskClass, Tier
from taskcore.codec import wire_field
from taskcore.errors import ErrorCode, TaskError
from taskcore.schema import input_schema
from taskcore.service import Operation, Surface, default_registry


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Sample:
    """Every kind of field the generator spells."""

    task_id: str = wire_field(wire="taskId", pattern=r"[a-z0-9_]+", doc="the task")
    count: int = wire_field(lo=1, hi=9)
    big: int | None = wire_field(default=None)
    ratio: float | None = wire_field(default=None)
    waiting: bool = wire_field()
    urgent: bool = wire_field(default=False, wire="isUrgent")
    mode: Literal["a", "b"] | None = wire_field(default=None)
    colour: Colour = wire_field(default=Colour.RED)
    tags: tuple[str, ...] = wire_field(default=())
    payload: Any = wire_field(default=None, doc="JSON")
    extra: dict[str, Any] | None = wire_field(default=None)
    name: str = wire_field(default="")


def _by_name(params):
    return {p.name: p for p in params}


def test_each_field_gets_one_parameter_of_its_annotated_type():
    params = _by_name(field_params(Sample))
    assert list(params) == [a.name for a in attrs.fields(Sample)]
    assert params["task_id"].param.opts == ["--task-id"]
    assert params["task_id"].wire == "taskId"
    assert params["task_id"].param.help == "the task"
    count = params["count"].param.type
    assert isinstance(count, click.IntRange)
    assert (count.min, count.max) == (1, 9)
    big = params["big"].param.type
    assert isinstance(big, click.IntRange)
    assert (big.min, big.max) == (0, None)  # the wire's u64 has no useful upper bound here
    assert params["ratio"].param.type is click.FLOAT
    assert params["waiting"].param.type is click.BOOL  # required: --waiting true|false
    assert params["urgent"].kind == "flag"
    assert params["urgent"].param.opts == ["--is-urgent"]
    assert params["urgent"].param.secondary_opts == ["--no-is-urgent"]
    mode = params["mode"].param.type
    assert isinstance(mode, click.Choice)
    assert list(mode.choices) == ["a", "b"]
    colour = params["colour"].param.type
    assert isinstance(colour, click.Choice)
    assert list(colour.choices) == ["red", "blue"]
    assert params["tags"].kind == "many"
    assert params["tags"].param.multiple
    for name in ("payload", "extra"):
        assert params[name].kind == "json"
        assert params[name].param.metavar == JSON_METAVAR


def test_required_exactly_when_the_field_has_no_default_and_defaults_are_shown():
    params = _by_name(field_params(Sample))
    assert {n for n, p in params.items() if p.required} == {"task_id", "count", "waiting"}
    assert all(p.param.required == p.required for p in params.values())
    assert params["colour"].param.show_default == "red"
    assert params["name"].param.show_default == "empty"
    assert params["big"].param.show_default is False


def test_shape_takes_an_argument_aliases_names_files_and_optional_fields():
    shape = Shape(
        argument="task_id",
        aliases={"count": ("--n",)},
        names={"extra": ("--file",)},
        files=frozenset({"extra"}),
        optional=frozenset({"waiting"}),
    )
    params = _by_name(field_params(Sample, shape))
    assert isinstance(params["task_id"].param, click.Argument)
    assert params["task_id"].param.required
    assert params["count"].param.opts == ["--count", "--n"]
    assert params["extra"].param.opts == ["--file"]
    assert params["extra"].kind == "file"
    assert not params["waiting"].required
    with pytest.raises(ValueError, match="no field"):
        field_params(Sample, Shape(aliases={"nope": ("--x",)}))
    with pytest.raises(ValueError, match="positional"):
        field_params(Sample, Shape(argument="tags"))


def test_request_body_leaves_out_what_was_not_given_and_parses_json(tmp_path):
    fields = field_params(Sample, Shape(files=frozenset({"extra"})))
    given_file = tmp_path / "extra.json"
    given_file.write_text('{"k": [1, 2]}')
    body = request_body(
        fields,
        {
            "task_id": "t1",
            "count": 2,
            "big": None,
            "waiting": False,
            "tags": ("x", "y"),
            "payload": '{"a": null}',
            "extra": str(given_file),
        },
    )
    assert body == {
        "taskId": "t1",
        "count": 2,
        "waiting": False,
        "tags": ["x", "y"],
        "payload": {"a": None},
        "extra": {"k": [1, 2]},
    }
    with pytest.raises(TaskError) as bad:
        request_body(fields, {"payload": "{not json"})
    assert bad.value.code is ErrorCode.MALFORMED_JSON
    with pytest.raises(TaskError) as missing:
        request_body(fields, {"extra": str(tmp_path / "absent.json")})
    assert missing.value.code is ErrorCode.BAD_INPUT


def _op(input_type: type[Any]) -> Operation[Any, Any]:
    return Operation(
        name="agenttask.sample",
        summary="A sample.",
        input_type=input_type,
        output_type=None,
        min_tier=Tier.AGENT,
        risk=RiskClass.READ,
        idempotent=True,
        mcp=False,
        surface=Surface.QUEUE,
        handler=lambda ctx, req: None,
    )


def test_a_generated_command_sends_the_request_and_prints_the_answer():
    sent: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def call(body: dict[str, Any], options: dict[str, Any]) -> Any:
        sent.append((body, options))
        return {"echo": body}

    extra = click.option("--where", default="here")
    command = operation_command(
        _op(Sample), "sample", call, shape=Shape(argument="task_id"), options=(extra,)
    )
    args = ["t1", "--count", "3", "--waiting", "yes", "--tags", "a", "--is-urgent", "--json"]
    result = CliRunner().invoke(command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "echo": {"taskId": "t1", "count": 3, "waiting": True, "isUrgent": True, "tags": ["a"]}
    }
    assert sent[0][1] == {"where": "here"}
    readable = CliRunner().invoke(command, ["t1", "--count", "3", "--waiting", "no"])
    assert "taskId: t1" in readable.stdout
    for bad in (["t1", "--waiting", "no"], ["t1", "--count", "0", "--waiting", "no"]):
        assert CliRunner().invoke(command, bad).exit_code == 2  # usage errors before any call
    assert len(sent) == 2
    refused = CliRunner().invoke(
        command, ["t1", "--count", "1", "--waiting", "no", "--payload", "[", "--json"]
    )
    assert refused.exit_code == 3
    assert json.loads(refused.stderr)["code"] == "MALFORMED_JSON"


def test_a_field_that_clashes_with_a_command_option_is_refused():
    @attrs.frozen(kw_only=True)
    class Clash:
        where: str = wire_field()

    with pytest.raises(ValueError, match="clash"):
        operation_command(
            _op(Clash), "x", lambda b, o: b, options=(click.option("--where", default=""),)
        )

    @attrs.frozen(kw_only=True)
    class Reserved:
        url: str = wire_field()

    with pytest.raises(ValueError, match="clashes"):
        field_params(Reserved)


@pytest.mark.parametrize(
    "op",
    [
        op
        for op in default_registry().select(
            surfaces=(Surface.QUEUE, Surface.ADMIN, Surface.OPERATOR)
        )
        if not op.raw_input
    ],
    ids=lambda op: op.name,
)
def test_parameters_match_the_published_input_schema(op):
    """The flags name the same keys, and require the same ones, as the JSON Schema does."""
    schema = input_schema(op.input_type)
    params = field_params(op.input_type)
    assert [p.wire for p in params] == list(schema["properties"])
    assert sorted(p.wire for p in params if p.required) == sorted(schema["required"])
    for spec in params:
        assert spec.param.opts[0] == flag_name(spec.wire)
        declared = schema["properties"][spec.wire]
        if "enum" in declared and isinstance(spec.param.type, click.Choice):
            assert list(spec.param.type.choices) == declared["enum"]
