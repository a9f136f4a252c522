"""One generated constructor per wire class: every field's check in one expression.

attrs' ``__init__`` calls each field's validator (:mod:`taskcore.wirevalidate`) in turn: one
Python call per field, each looking up its generated test. A view the service builds on
every call (a queue ``TaskView``: 34 fields) pays that per field. :func:`constructor` gives
a function with the class's keyword arguments that tests every field in one generated
expression (the same tests the validators run) and, when all pass, sets the fields as
attrs' ``__init__`` does (``object.__setattr__``, then ``__attrs_post_init__``). When any
test fails it calls the class itself, so the refusal, its code, message and path, is the
validator's, exactly as before.

A class it cannot describe (converters, a ``__attrs_pre_init__``, a cached hash, a factory
that takes ``self``, a validator that is not a ``wire_field``'s, an unresolvable annotation,
positional fields) gets the class itself back. attrs only, like :mod:`taskcore.wirefield`.

>>> import attrs
>>> from taskcore.wirefield import wire_field
>>> @attrs.frozen(kw_only=True)
... class Row:
...     name: str = wire_field(max_len=4)
...     size: int = wire_field(default=1)
>>> build = constructor(Row)
>>> build(name="ab")
Row(name='ab', size=1)
>>> build(name="abcde")
Traceback (most recent call last):
taskcore.errors.TaskError: 5 characters; at most 4 are allowed at $.name
"""

from __future__ import annotations

import builtins
import keyword
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from taskcore.wirefield import field_rules
from taskcore.wirerules import ranged_rules
from taskcore.wirevalidate import field_accepts, is_wire_validator

__all__ = ["builds_without_init", "constructor", "evolved"]

T = TypeVar("T")

_MISSING = object()
_RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist)


def builds_without_init(cl: type[Any]) -> bool:
    """Whether ``cl`` may be built as its ``__init__`` would, minus the validators.

    attrs' ``__init__`` of a slotted class sets each field with ``object.__setattr__`` (frozen
    or not), runs the validators, then ``__attrs_post_init__``. A class with anything more
    in its ``__init__`` (converters, ``__attrs_pre_init__``, a cached hash, a factory that
    takes ``self``) is built through the constructor, validators and all.
    """
    if "__slots__" not in cl.__dict__ or hasattr(cl, "__attrs_pre_init__"):
        return False
    if "_attrs_cached_hash" in getattr(cl, "__slots__", ()):
        return False
    for field in attrs.fields(cl):
        if field.converter is not None:
            return False
        default = field.default
        if isinstance(default, attrs.Factory) and default.takes_self:  # type: ignore[arg-type]
            return False
    return True


_BUILT: dict[type[Any], Callable[..., Any]] = {}


def constructor(cl: type[T]) -> Callable[..., T]:
    """``cl``'s keyword-argument constructor with one generated check (see above), or ``cl``.

    Built on first use and kept; the declared types are resolved then.
    """
    found = _BUILT.get(cl)
    if found is None:
        try:
            found = _generate(cl)
        except Exception:  # a class this module cannot describe: its own constructor
            found = cl
        found = _BUILT.setdefault(cl, found)
    return typing.cast(Callable[..., T], found)


def _slot(cl: type[Any], name: str) -> types.MemberDescriptorType | None:
    """The slot descriptor that holds ``name`` on instances of ``cl``, if a slot does."""
    for klass in cl.__mro__:
        found = klass.__dict__.get(name)
        if found is not None:
            return found if isinstance(found, types.MemberDescriptorType) else None
    return None


def _generate(cl: type[Any]) -> Callable[..., Any]:
    attrs.resolve_types(cl)
    fields = attrs.fields(cl)
    if not builds_without_init(cl):
        return cl
    env: dict[str, Any] = {"_cl": cl, "_new": object.__new__, "_put": object.__setattr__}
    env["_M"] = _MISSING
    params: list[str] = []
    prelude: list[str] = []
    tests: list[str] = []
    for i, field in enumerate(fields):
        name = field.alias
        if (
            not field.init
            or not field.kw_only
            or not name.isidentifier()
            or name in _RESERVED
            or name.startswith("_")
        ):
            return cl
        default = field.default
        if default is attrs.NOTHING:
            params.append(name)
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            env[f"_f{i}"] = default.factory
            params.append(f"{name}=_M")
            prelude.append(f"    if {name} is _M: {name} = _f{i}()")
        else:
            env[f"_d{i}"] = default
            params.append(f"{name}=_d{i}")
        validator = field.validator
        if validator is None:
            continue
        if not is_wire_validator(validator):
            return cl
        tp = field.type if field.type is not None else typing.Any
        if isinstance(tp, str):
            return cl
        tests.append(field_accepts(name, tp, ranged_rules(field_rules(field), tp), env, f"_{i}"))
    if any(f.alias in env for f in fields):  # a field named like a helper: keep it simple
        return cl
    lines = [f"def build(*, {', '.join(params)}):", *prelude]
    lines.append(f"    if {' and '.join(tests) or 'True'}:")
    lines.append("        o = _new(_cl)")
    for i, field in enumerate(fields):
        slot = _slot(cl, field.name)
        if slot is None:
            lines.append(f"        _put(o, {field.name!r}, {field.alias})")
        else:  # the slot's own setter: what object.__setattr__ ends in, without the lookup
            env[f"_s{i}"] = slot.__set__
            lines.append(f"        _s{i}(o, {field.alias})")
    if hasattr(cl, "__attrs_post_init__"):
        lines.append("        o.__attrs_post_init__()")
    lines.append("        return o")
    # A value a test refused: the class's own constructor raises the validator's error.
    lines.append(f"    return _cl({', '.join(f'{f.alias}={f.alias}' for f in fields)})")
    source = "\n".join(lines)
    exec(compile(source, f"<wire constructor {cl.__qualname__}>", "exec"), env)  # noqa: S102 - generated from field declarations only
    return typing.cast(Callable[..., Any], env["build"])


_COPIERS: dict[type[Any], Callable[..., Any]] = {}


def evolved(inst: T, **changes: Any) -> T:
    """``attrs.evolve(inst, **changes)`` for a record whose fields have no validator.

    A stored row is copied on every write of it (``version`` + 1 and the changed columns):
    its slots are copied as they are and the changes set, which is what ``attrs.evolve``'s
    ``__init__`` call does for such a class. Any other class (a validator, a converter,
    ``__attrs_post_init__``, no slots), or a change that names no field, goes through
    ``attrs.evolve`` itself.
    """
    cl = inst.__class__
    copier = _COPIERS.get(cl)
    if copier is None:
        try:
            copier = _copier(cl)
        except Exception:  # a class this module cannot describe
            copier = _evolve
        copier = _COPIERS.setdefault(cl, copier)
    return typing.cast(T, copier(inst, changes))


def _evolve(inst: Any, changes: dict[str, Any]) -> Any:
    return attrs.evolve(inst, **changes)


def _copier(cl: type[Any]) -> Callable[[Any, dict[str, Any]], Any]:
    fields = attrs.fields(cl)
    if not builds_without_init(cl) or hasattr(cl, "__attrs_post_init__"):
        return _evolve
    env: dict[str, Any] = {"_new": object.__new__, "_cl": cl, "_ev": _evolve}
    lines = ["def copy(o, changes):", "    n = _new(_cl)"]
    setters: dict[str, Any] = {}
    for i, field in enumerate(fields):
        slot = _slot(cl, field.name)
        if not field.init or field.validator is not None or slot is None:
            return _evolve
        env[f"_s{i}"], env[f"_g{i}"] = slot.__set__, slot.__get__
        setters[field.alias] = slot.__set__
        lines.append(f"    _s{i}(n, _g{i}(o))")
    env["_set"] = setters
    lines += [
        "    for k, v in changes.items():",
        "        s = _set.get(k)",
        "        if s is None: return _ev(o, changes)",  # attrs.evolve's TypeError
        "        s(n, v)",
        "    return n",
    ]
    exec(compile("\n".join(lines), f"<wire copier {cl.__qualname__}>", "exec"), env)  # noqa: S102 - generated from field declarations only
    return typing.cast(Callable[[Any, dict[str, Any]], Any], env["copy"])
