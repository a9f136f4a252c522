"""The views encode with the documented camelCase keys."""

from __future__ import annotations

import attrs
from taskcore.codec import unstructure, wire_name
from taskcore.queue import types
from taskcore.queue.types import ClaimResult, GateStatus, TaskStatus


def test_terminal_statuses_are_done_failed_cancelled():
    assert {s.value for s in TaskStatus if s.terminal} == {"DONE", "FAILED", "CANCELLED"}
    assert [s.value for s in GateStatus] == [
        "PENDING",
        "APPROVED",
        "REJECTED",
        "CONSUMED",
        "VOIDED",
    ]


def test_every_view_key_is_camel_case():
    for name in types.__all__:
        cls = getattr(types, name)
        if attrs.has(cls):
            for field in attrs.fields(cls):
                assert "_" not in wire_name(field), (name, field.name)


def test_an_unclaimed_result_encodes_its_optional_parts_as_null():
    assert unstructure(ClaimResult(claimed=False)) == {
        "claimed": False,
        "task": None,
        "lease": None,
        "resume": None,
    }
