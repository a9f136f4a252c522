"""Wire-field declarations: :func:`wire_field` and the :class:`FieldRules` it records.

attrs only (no cattrs): a module that declares wire types but never decodes them (the done
gate's ``session_gate``, loaded by the Stop hook) does not load the codec.
:mod:`taskcore.codec` re-exports every name here and checks the rules while decoding; the
rules themselves and their checks are :mod:`taskcore.wirerules`.

>>> import attrs
>>> @attrs.frozen
... class Row:
...     name: str = wire_field(max_len=8, wire="rowName")
>>> wire_name(attrs.fields(Row).name), field_rules(attrs.fields(Row).name).max_len
('rowName', 8)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from taskcore.limits import U64_MAX
from taskcore.wirerules import SCHEMA_VERSION, FieldRules
from taskcore.wirevalidate import field_validator

__all__ = [
    "FIELD_RULES_KEY",
    "SCHEMA_VERSION",
    "FieldRules",
    "field_rules",
    "wire_field",
    "wire_name",
]

FIELD_RULES_KEY = "taskcore.rules"
"""attrs metadata key under which :class:`FieldRules` are stored."""


def wire_field(
    *,
    default: Any = attrs.NOTHING,
    factory: Callable[[], Any] | None = None,
    wire: str | None = None,
    min_len: int | None = None,
    max_len: int | None = None,
    pattern: str | None = None,
    lo: int | None = 0,
    hi: int | None = U64_MAX,
    item_min_len: int | None = None,
    item_max_len: int | None = None,
    item_pattern: str | None = None,
    version: bool = False,
    doc: str | None = None,
    omit_none: bool = False,
) -> Any:
    """Declare an attrs field with wire rules (see :class:`FieldRules`).

    Decoding checks the rules on the JSON value; the field's attrs validator
    (:mod:`taskcore.wirevalidate`) checks them, and the declared type, on a value passed to
    the constructor, with the same error. A field without ``default``/``factory`` is required on the wire, even when its type
    admits ``None``: strict decoding wants ``"x": null`` spelled out. ``omit_none`` needs
    ``default=None``.
    """
    if omit_none and default is not None:
        raise TypeError("omit_none needs default=None")
    rules = FieldRules(
        wire=wire,
        min_len=min_len,
        max_len=max_len,
        pattern=pattern,
        lo=lo,
        hi=hi,
        item_min_len=item_min_len,
        item_max_len=item_max_len,
        item_pattern=item_pattern,
        version=version,
        doc=doc,
        omit_none=omit_none,
    )
    metadata = {FIELD_RULES_KEY: rules}
    validator = field_validator(rules)
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata, validator=validator)
    return attrs.field(default=default, metadata=metadata, validator=validator)


def field_rules(field: attrs.Attribute[Any]) -> FieldRules:
    """Return the rules of an attrs field (defaults when it was declared without any)."""
    rules = field.metadata.get(FIELD_RULES_KEY)
    return rules if isinstance(rules, FieldRules) else FieldRules()


def wire_name(field: attrs.Attribute[Any]) -> str:
    """Return the JSON key of an attrs field."""
    return field_rules(field).wire or field.name
