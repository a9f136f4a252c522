"""The codec's fast path: one generated structure function per wire type.

cattrs' generated functions plus a rule-checking wrapper per field cost several times the
JSON parse. For a *valid* document the same result comes from one closure per type that
checks and builds in one pass, with each field's rules (:mod:`taskcore.wirerules`) folded
into a specialised test. It accepts only what the converter accepts (exact JSON types, no
unknown key, every required key, every rule); on anything else it gives up (any exception)
and the converter runs as before, so every error, its code, message and path, is the
converter's. ``tests/taskcore/test_codec.py`` checks that both paths agree on generated
documents.

:class:`taskcore.codec.Codec` owns two of these (one for trees already checked by
:func:`~taskcore.jsontext.validate_tree`, one for trees that were not); nothing else uses
this module.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin

import attrs
import cattrs

from taskcore.jsontext import _SURROGATE
from taskcore.wirebuild import builds_without_init
from taskcore.wirefield import field_rules
from taskcore.wirerules import (
    FieldRules,
    is_dict,
    is_enum,
    is_literal,
    is_var_tuple,
    item_rules,
    ranged_rules,
    rule_test,
    text_refusals,
)

__all__ = ["FastStructure"]

_Fast = Callable[[Any], Any]


class _GiveUpError(Exception):
    """The fast path does not accept the value; the converter decides."""


def _give_up(_: Any) -> Any:
    raise _GiveUpError


class FastStructure:
    """One fast structure function per type, built on first use (see above)."""

    def __init__(self, converter: cattrs.Converter, *, checked_tree: bool) -> None:
        self.converter = converter
        self.checked_tree = checked_tree
        self.hooks: dict[Any, _Fast] = {}

    def hook(self, tp: Any) -> _Fast:
        """The fast structure function of ``tp`` (built on first use, then kept)."""
        found = self.hooks.get(tp)
        if found is not None:
            return found
        # A class may contain itself (directly or not): refer to the finished hook late.
        late: list[_Fast] = []
        self.hooks[tp] = lambda v: late[0](v)
        try:
            built = self._build(tp)
        except Exception:  # a type the fast path cannot describe: always use the converter
            built = self._delegate(tp)
        late.append(built)
        self.hooks[tp] = built
        return built

    def _delegate(self, tp: Any) -> _Fast:
        slow = self.converter.get_structure_hook(tp)
        return lambda v: slow(v, tp)

    def _build(self, tp: Any) -> _Fast:
        if tp is str:
            if self.checked_tree:  # validate_tree already refused every lone surrogate
                return lambda v: v if type(v) is str else _give_up(v)
            search = _SURROGATE.search
            return lambda v: v if type(v) is str and search(v) is None else _give_up(v)
        if tp is int or tp is bool:
            return lambda v: v if type(v) is tp else _give_up(v)
        if tp is float:
            return lambda v: float(v) if type(v) is float or type(v) is int else _give_up(v)
        if tp is typing.Any:
            return lambda v: v
        if is_enum(tp):
            members = {m.value: m for m in tp}
            value_type = type(next(iter(members)))
            return lambda v: members[v] if type(v) is value_type and v in members else _give_up(v)
        if is_literal(tp):
            allowed = get_args(tp)

            def literal(v: Any) -> Any:
                for option in allowed:
                    if type(v) is type(option) and v == option:
                        return v
                raise _GiveUpError

            return literal
        args = get_args(tp)
        if (
            get_origin(tp) in (typing.Union, types.UnionType)
            and len(args) == 2
            and type(None) in args
        ):
            inner = self.hook(args[0] if args[1] is type(None) else args[1])
            return lambda v: None if v is None else inner(v)
        if is_var_tuple(tp):
            item = self.hook(args[0])
            return lambda v: tuple([item(x) for x in v]) if type(v) is list else _give_up(v)
        if is_dict(tp):
            return lambda v: dict(v) if type(v) is dict else _give_up(v)
        if attrs.has(tp):
            return self._class(tp)
        return self._delegate(tp)

    def _class(self, cl: type[Any]) -> _Fast:
        """Generate one function that checks and builds ``cl`` (straight-line code per field).

        Each field becomes a few lines: fetch the key (a missing required key raises
        ``KeyError``), one ``if`` that refuses a wrong type or a broken rule (inlined for
        ``str``, ``int``, ``bool`` and ``tuple[str, ...]`` fields), or else a call of the field
        type's own fast hook after its rule test.
        """
        attrs.resolve_types(cl)
        fields = attrs.fields(cl)
        if any(not f.init for f in fields) or not all(f.alias.isidentifier() for f in fields):
            return self._delegate(cl)
        env: dict[str, Any] = {"G": _GiveUpError, "cl": cl}
        lines = ["def build(v):", "    if type(v) is not dict or not keys.issuperset(v): raise G"]
        args: list[str] = []
        wires: list[str] = []
        trusted = builds_without_init(cl)
        for i, field in enumerate(fields):
            rules = field_rules(field)
            wire = rules.wire or field.name
            wires.append(wire)
            if field.default is attrs.NOTHING:
                lines.append(f"    x = v[{wire!r}]")
                lines.extend("    " + line for line in self._field(i, field.type, rules, env))
                args.append(f"{field.alias}=r{i}")
            elif trusted:
                lines.append(f"    if {wire!r} in v:")
                lines.append(f"        x = v[{wire!r}]")
                lines.extend("        " + line for line in self._field(i, field.type, rules, env))
                lines.append("    else:")
                if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
                    env[f"f{i}"] = field.default.factory
                    lines.append(f"        r{i} = f{i}()")
                else:
                    env[f"d{i}"] = field.default
                    lines.append(f"        r{i} = d{i}")
            else:
                if "**kw" not in args:
                    lines.insert(2, "    kw = {}")
                    args.append("**kw")
                lines.append(f"    if {wire!r} in v:")
                lines.append(f"        x = v[{wire!r}]")
                lines.extend("        " + line for line in self._field(i, field.type, rules, env))
                lines.append(f"        kw[{field.alias!r}] = r{i}")
        env["keys"] = frozenset(wires)
        if trusted:
            # Every rule was checked above: set the fields as attrs' __init__ does, without
            # running the validators again, then the class's own cross-field checks.
            env["new"] = object.__new__
            env["put"] = object.__setattr__
            lines.append("    o = new(cl)")
            lines.extend(f"    put(o, {f.name!r}, r{i})" for i, f in enumerate(fields))
            if hasattr(cl, "__attrs_post_init__"):
                lines.append("    o.__attrs_post_init__()")
            lines.append("    return o")
        else:
            lines.append(f"    return cl({', '.join(args)})")
        source = "\n".join(lines)
        exec(compile(source, f"<fast structure {cl.__qualname__}>", "exec"), env)  # noqa: S102 - generated from field declarations only
        return typing.cast(_Fast, env["build"])

    def _field(self, i: int, tp: Any, rules: FieldRules, env: dict[str, Any]) -> list[str]:
        """Lines that test ``x`` against one field's type and rules and leave it in ``r<i>``."""
        rules = ranged_rules(rules, tp)
        args = get_args(tp)
        optional = get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args
        bare = tp
        if optional:
            rest = [a for a in args if a is not type(None)]
            bare = rest[0] if len(rest) == 1 else tp
        inline = self._inline(i, bare, rules, env)
        if inline is None:  # the rule test, then the type's own hook (None included)
            check = rule_test(rules, bare)
            env[f"h{i}"] = self.hook(tp) if tp is not None else (lambda v: v)
            lines = []
            if check is not None:
                env[f"c{i}"] = check
                lines.append(f"if x is not None and not c{i}(x): raise G")
            return [*lines, f"r{i} = h{i}(x)"]
        if not optional:
            return [line.replace("@", f"r{i}") for line in inline]
        return [
            "if x is None:",
            f"    r{i} = None",
            "else:",
            *("    " + line.replace("@", f"r{i}") for line in inline),
        ]

    def _inline(
        self, i: int, bare: Any, rules: FieldRules, env: dict[str, Any]
    ) -> list[str] | None:
        """Lines for a non-null ``x`` of a simple field type (``@`` is the target), or ``None``."""
        if rules.version:
            return None
        if is_enum(bare):
            members = {m.value: m for m in bare}
            value_type = type(next(iter(members)))
            if value_type is not str or rule_test(rules, str) is not None:
                return None
            env[f"m{i}"] = members
            return [f"@ = m{i}.get(x) if type(x) is str else None", "if @ is None: raise G"]
        if bare is bool:
            return ["if type(x) is not bool: raise G", "@ = x"]
        if bare is int:
            refuse = ["type(x) is not int"]
            if rules.lo is not None:
                refuse.append(f"x < {rules.lo!r}")
            if rules.hi is not None:
                refuse.append(f"x > {rules.hi!r}")
            return [f"if {' or '.join(refuse)}: raise G", "@ = x"]
        if bare is str:
            refuse = [
                "type(x) is not str",
                *text_refusals("x", str(i), rules, env, surrogates=not self.checked_tree),
            ]
            return [f"if {' or '.join(refuse)}: raise G", "@ = x"]
        if bare == tuple[str, ...]:
            refuse = ["type(x) is not list"]
            if rules.max_len is not None:
                refuse.append(f"len(x) > {rules.max_len!r}")
            if rules.min_len is not None:
                refuse.append(f"len(x) < {rules.min_len!r}")
            item = [
                "type(y) is not str",
                *text_refusals(
                    "y", f"{i}i", item_rules(rules), env, surrogates=not self.checked_tree
                ),
            ]
            return [
                f"if {' or '.join(refuse)}: raise G",
                "for y in x:",
                f"    if {' or '.join(item)}: raise G",
                "@ = tuple(x)",
            ]
        return None
