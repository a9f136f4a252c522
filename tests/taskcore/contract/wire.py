"""A strictness harness shared by the contract tests: round trips and one-change mutations.

Given any valid instance, :func:`slots` lists every value of its JSON tree with the JSON path
the decoder must report and the wire rules that apply to it. The ``check_*`` helpers change
exactly one thing and assert the decoder's stable code and path, so each contract test module
runs the same property over its own types:

* round trip: ``decode(encode(x)) == x`` and the canonical bytes survive;
* a removed field is ``MISSING_FIELD`` at its path, an added one ``UNKNOWN_FIELD``;
* a value of the wrong JSON type (``1.5`` anywhere; ``"1"`` or ``true`` for an integer; ``1``
  for a string or boolean) is ``WRONG_TYPE``;
* a string or array one past its bound, an integer one past its range and a version other
  than 1 are ``OUT_OF_BOUNDS`` / ``UNSUPPORTED_VERSION``; a string outside its pattern is
  ``INVALID_VALUE``.
"""

from __future__ import annotations

import copy
import json
import typing
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from taskcore.canonical import canonical_json
from taskcore.codec import SCHEMA_VERSION, Codec, FieldRules, field_rules, wire_name
from taskcore.errors import ErrorCode, TaskError

CODEC = Codec()
UNKNOWN_KEY = "zz_not_in_v1"


@attrs.frozen
class Slot:
    """One value in a JSON tree: where it is, what rules apply, whether it is a field."""

    path: str
    keys: tuple[str | int, ...]
    rules: FieldRules
    is_field: bool
    value: Any


def _resolved_fields(cls: type[Any]) -> tuple[attrs.Attribute[Any], ...]:
    attrs.resolve_types(cls)
    return attrs.fields(cls)


def slots(obj: Any) -> tuple[list[Slot], list[tuple[str, tuple[str | int, ...]]]]:
    """Return (every value slot, every object node) of ``obj``'s JSON tree."""
    tree = CODEC.unstructure(obj)
    values: list[Slot] = []
    objects: list[tuple[str, tuple[str | int, ...]]] = []

    def walk(node: Any, subtree: Any, path: str, keys: tuple[str | int, ...]) -> None:
        objects.append((path, keys))
        for field in _resolved_fields(type(node)):
            key = wire_name(field)
            rules = field_rules(field)
            value = getattr(node, field.name)
            fpath, fkeys = f"{path}.{key}", (*keys, key)
            if key not in subtree and rules.omit_none and value is None:
                continue  # left out of the bytes while None
            required = field.default is attrs.NOTHING
            values.append(Slot(fpath, fkeys, rules, required, subtree[key]))
            if attrs.has(type(value)):
                walk(value, subtree[key], fpath, fkeys)
            elif isinstance(value, tuple):
                item_rules = FieldRules(
                    min_len=rules.item_min_len,
                    max_len=rules.item_max_len,
                    pattern=rules.item_pattern,
                    lo=rules.lo,
                    hi=rules.hi,
                )
                for index, item in enumerate(value):
                    ipath, ikeys = f"{fpath}[{index}]", (*fkeys, index)
                    if attrs.has(type(item)):
                        values.append(Slot(ipath, ikeys, FieldRules(), False, subtree[key][index]))
                        walk(item, subtree[key][index], ipath, ikeys)
                    else:
                        values.append(Slot(ipath, ikeys, item_rules, False, subtree[key][index]))

    walk(obj, tree, "$", ())
    return values, objects


def _set(tree: Any, keys: tuple[str | int, ...], value: Any) -> Any:
    out = copy.deepcopy(tree)
    node = out
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return out


def _delete(tree: Any, keys: tuple[str | int, ...]) -> Any:
    out = copy.deepcopy(tree)
    node = out
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]
    return out


def expect_error(
    cls: type[Any],
    tree: Any,
    code: ErrorCode,
    path: str,
    decoder: Callable[[Any], Any] | None = None,
) -> TaskError:
    """Decode ``tree`` as ``cls`` (or with ``decoder``) and assert exactly ``code`` at ``path``."""
    decode = decoder if decoder is not None else (lambda t: CODEC.structure(t, cls))
    with pytest.raises(TaskError) as info:
        decode(tree)
    err = info.value
    assert (err.code, err.path) == (code, path), err.to_json()
    return err


def check_round_trip(obj: Any, decoder: Callable[[Any], Any] | None = None) -> None:
    """Encoding then strictly decoding gives back an equal value and the same canonical bytes."""
    raw = CODEC.dumps(obj)
    back = decoder(json.loads(raw)) if decoder else CODEC.decode(type(obj), raw)
    assert back == obj
    assert canonical_json(back) == canonical_json(obj)
    # The plain encoding is JSON of the same tree as the canonical bytes, in the same order.
    assert json.loads(canonical_json(obj)) == json.loads(raw)


def wrong_type_values(value: Any) -> list[Any]:
    """JSON values of another type than ``value`` that no field of that shape accepts."""
    out: list[Any] = [1.5]
    if type(value) is int:
        out += [str(value), True, [value]]
    elif type(value) is str:
        out += [1, True, [value]]
    elif type(value) is bool:
        out += [1, "true"]
    elif type(value) is list:
        out += [{}, "[]"]
    elif type(value) is dict:
        out += [[], "{}"]
    return out


def check_strictness(obj: Any, decoder: Callable[[Any], Any] | None = None) -> int:
    """Apply every one-change mutation to ``obj``'s tree; return how many were checked."""
    cls = type(obj)
    tree = CODEC.unstructure(obj)
    values, objects = slots(obj)
    checked = 0

    def expect(mutated: Any, code: ErrorCode, path: str) -> None:
        nonlocal checked
        expect_error(cls, mutated, code, path, decoder)
        checked += 1

    for path, keys in objects:
        node_keys = (*keys, UNKNOWN_KEY)
        expect(_set(tree, node_keys, 0), ErrorCode.UNKNOWN_FIELD, f"{path}.{UNKNOWN_KEY}")
    for slot in values:
        if slot.is_field:
            expect(_delete(tree, slot.keys), ErrorCode.MISSING_FIELD, slot.path)
        for bad in wrong_type_values(slot.value):
            expect(_set(tree, slot.keys, bad), ErrorCode.WRONG_TYPE, slot.path)
        for mutated_value, code in _bound_mutations(slot):
            expect(_set(tree, slot.keys, mutated_value), code, slot.path)
    return checked


def _bound_mutations(slot: Slot) -> list[tuple[Any, ErrorCode]]:
    rules, value = slot.rules, slot.value
    out: list[tuple[Any, ErrorCode]] = []
    if rules.version:
        return [
            (SCHEMA_VERSION + 1, ErrorCode.UNSUPPORTED_VERSION),
            (0, ErrorCode.UNSUPPORTED_VERSION),
        ]
    if type(value) is str:
        if rules.max_len is not None:
            out.append(("a" * (rules.max_len + 1), ErrorCode.OUT_OF_BOUNDS))
        if rules.min_len:
            out.append(("", ErrorCode.OUT_OF_BOUNDS))
        if rules.pattern is not None:
            out.append(("not valid!", ErrorCode.INVALID_VALUE))
    elif type(value) is list:
        if rules.max_len is not None:
            filler = value[0] if value else "x"
            grown = value + [filler] * (rules.max_len + 1 - len(value))
            out.append((grown, ErrorCode.OUT_OF_BOUNDS))
        if rules.min_len:
            out.append(([], ErrorCode.OUT_OF_BOUNDS))
    elif type(value) is int:
        lo = rules.lo if rules.lo is not None else 0
        hi = rules.hi if rules.hi is not None else 2**64 - 1
        out.append((lo - 1, ErrorCode.OUT_OF_BOUNDS))
        out.append((hi + 1, ErrorCode.OUT_OF_BOUNDS))
    return out


def declared_types(cls: type[Any]) -> dict[str, Any]:
    """The resolved field types of an attrs class (for meta tests over the contract)."""
    return typing.get_type_hints(cls)


def changed(value: Any) -> Any:
    """Return a different value of the same kind and shape (same length, same alphabet)."""
    import enum
    import re

    if isinstance(value, bool):
        return not value
    if isinstance(value, enum.Enum):
        members = list(type(value))
        return members[(members.index(value) + 1) % len(members)]
    if isinstance(value, int):
        return value + 1 if value < 2**64 - 1 else value - 1
    if isinstance(value, str):
        if re.fullmatch(r"[0-9a-f]{64}", value):
            return ("0" if value[0] != "0" else "1") + value[1:]
        return value[:-1] + ("b" if value[-1] != "b" else "c")
    raise TypeError(f"no change defined for {value!r}")
