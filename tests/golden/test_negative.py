"""taskcore's decoder and verifier against every negative golden vector (code and path).

``golden/negative/`` holds documents an implementation must refuse, each with the error code
and JSON path docs/contract.md gives for the refusal (format in golden/README.md). The
independent checker refuses each of them the same way (``test_independent.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import taskcore.contract as contract
from taskcore.codec import Codec
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import ASSERTION_MAX_BYTES

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
NEGATIVE = sorted((GOLDEN / "negative").glob("*.json"))
KEYS = {"name", "description", "type", "check", "document", "error"}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="ascii"))


def answer(codec: Codec, vector: dict, document: object) -> tuple[str, str | None] | None:
    cls = getattr(contract, vector["type"])
    try:
        value = codec.decode(cls, document, max_bytes=ASSERTION_MAX_BYTES)
        if vector["check"] == "verify":
            contract.verify_observation(value, vector["public_key"])
    except TaskError as err:
        return err.code.value, err.path
    return None


@pytest.mark.parametrize("path", NEGATIVE, ids=lambda p: p.stem)
def test_a_negative_vector_has_exactly_the_documented_keys(path):
    vector = load(path)
    expected = KEYS | ({"public_key"} if vector["check"] == "verify" else set())
    assert set(vector) == expected
    assert vector["name"] == path.stem
    assert vector["check"] in ("decode", "verify")
    assert set(vector["error"]) == {"code", "path"}
    ErrorCode.from_wire(vector["error"]["code"])
    assert vector["description"]


@pytest.mark.parametrize("path", NEGATIVE, ids=lambda p: p.stem)
@pytest.mark.parametrize("codec", [Codec(), Codec(fast=False)], ids=["fast", "converter"])
def test_taskcore_refuses_a_negative_vector_with_its_code_and_path(path, codec):
    vector = load(path)
    raw = vector["document"].encode("utf-8")
    assert answer(codec, vector, raw) == (vector["error"]["code"], vector["error"]["path"])


def _tree(document: str) -> object:
    """The document as an already-parsed tree, when JSON text was not what is wrong with it."""

    def pairs(items: list) -> dict:
        if len({k for k, _ in items}) != len(items):
            raise ValueError("duplicate key")
        return dict(items)

    if document.startswith("\ufeff"):
        raise ValueError("byte order mark")
    return json.loads(document, object_pairs_hook=pairs)


def _as_object_tree(path: Path) -> dict | None:
    """The vector's document as an object tree, or ``None`` where no such tree exists: the
    JSON text itself is what is wrong (a duplicate key, a byte order mark, bad syntax), or the
    document is no object (``Codec.decode`` takes a tree as an object)."""
    try:
        tree = _tree(load(path)["document"])
    except ValueError:
        return None
    return tree if isinstance(tree, dict) else None


TREES = [p for p in NEGATIVE if _as_object_tree(p) is not None]
"""The vectors whose refusal is about the values, not the text: each also arrives as a tree."""


def test_most_vectors_also_arrive_as_trees():
    assert TREES
    assert len(TREES) < len(NEGATIVE)  # the text-level vectors (duplicate key, BOM) have none


@pytest.mark.parametrize("path", TREES, ids=lambda p: p.stem)
def test_the_same_refusal_when_the_document_arrives_as_a_tree(path):
    """MCP tool arguments and in-process callers pass trees: the same code and path."""
    vector = load(path)
    tree = _as_object_tree(path)
    assert answer(Codec(), vector, tree) == (vector["error"]["code"], vector["error"]["path"])


# The refusals issue 27 names, each covered by at least one vector.
NAMED = {
    "an unknown field": "unknown_field",
    "a duplicate key": "duplicate_key",
    "a wrong version": "wrong_version",
    "a non-canonical number": "integer_as_float",
    "a bad signature": "bad_signature",
    "a small-order public key": "small_order_public_key",
    "a wrong digest domain": "wrong_digest_domain",
    "an over-bound string": "identifier_over_bound",
}


def test_every_refusal_the_issue_names_has_a_vector():
    names = {p.stem for p in NEGATIVE}
    assert set(NAMED.values()) <= names
    assert load(GOLDEN / "negative" / "small_order_public_key.json")["public_key"] == (
        "01" + "00" * 31
    )
