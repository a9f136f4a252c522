"""docs/contract.md stays true: every type, field, enum value, digest domain and bound."""

import ast
import enum
import itertools
import re
import typing
from pathlib import Path

import attrs
import pytest
import taskcore.contract as contract
import taskcore.digest as digest
import taskcore.limits as limits
from taskcore.codec import wire_name

DOC = (Path(__file__).resolve().parents[1] / "docs" / "contract.md").read_text(encoding="utf-8")
TYPES = [obj for n in contract.__all__ if attrs.has(obj := getattr(contract, n))]
ENUMS = [
    obj
    for n in contract.__all__
    if isinstance(obj := getattr(contract, n), type) and issubclass(obj, enum.Enum)
]


def _section(name: str) -> str:
    match = re.search(rf"^#### `{name}`\n(.*?)(?=^#{{2,4}} )", DOC, re.S | re.M)
    assert match, f"docs/contract.md has no section for {name}"
    return match.group(1)


@pytest.mark.parametrize("cls", TYPES, ids=lambda c: c.__name__)
def test_every_type_and_field_is_documented_in_declared_order(cls):
    section = _section(cls.__name__)
    documented = re.findall(r"^\| `([a-z0-9_]+)` \|", section, re.M)
    assert documented == [wire_name(f) for f in attrs.fields(cls)]


@pytest.mark.parametrize("cls", ENUMS, ids=lambda c: c.__name__)
def test_every_enum_value_is_documented(cls):
    row = re.search(rf"^\| `{cls.__name__}` \| (.*)$", DOC, re.M)
    assert row, cls.__name__
    assert re.findall(r"`([a-z_]+)`", row.group(1))[: len(cls)] == [m.value for m in cls]


def test_every_digest_domain_is_documented_with_its_value():
    constants = [n for n in digest.__all__ if n.endswith(("_DOMAIN", "_DOMAIN_PREFIX"))]
    assert constants
    for name in constants:
        value = getattr(digest, name)
        row = re.search(rf"^\| `{name}` \|(.*)$", DOC, re.M)
        assert row, f"{name} is not in the digest domain table"
        assert value.rstrip(".") in row.group(1), name


def _documented_bounds() -> dict[str, str]:
    return dict(re.findall(r"^\| `([A-Z0-9_]+)` \| ([0-9,]+)", DOC, re.M))


def test_every_bound_the_contract_uses_is_documented():
    sources = "".join(p.read_text() for p in Path(contract.__file__).parent.glob("*.py"))
    used = {n for n in limits.__all__ if re.search(rf"\b{n}\b", sources)}
    assert used
    missing = used - set(_documented_bounds())
    assert missing == set(), "add these bounds to the table in docs/contract.md"


def _declared_sources() -> dict[str, str]:
    """Each bound's source as its own docstring in limits.py states it (*seed* or ours)."""
    source = Path(limits.__file__).read_text(encoding="utf-8")
    body = ast.parse(source).body
    out = {}
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            doc = after.value.value if isinstance(after, ast.Expr) else ""
            out[node.target.id] = "seed" if "*seed*" in str(doc) else "ours"
    return out


def test_every_documented_bound_has_its_current_value_and_source():
    sources = _declared_sources()
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| ([0-9,]+)[^|]*\| (seed|ours) \|", DOC, re.M)
    assert len(rows) >= 30
    for name, shown, origin in rows:
        assert hasattr(limits, name), f"{name} is documented but not in limits.py"
        assert int(shown.replace(",", "")) == getattr(limits, name), name
        assert origin == sources[name], name


def test_the_capability_and_observation_domain_are_spelled_as_the_seed_spells_them():
    assert "`agentscm.agent-workflow-tasks/v1`" in DOC
    assert "`agentscm.agent-workflow-observation.v1`" in DOC
    assert typing.get_args(contract.identity.RequestKind)
    for kind in typing.get_args(contract.identity.RequestKind):
        assert f"`{kind}`" in DOC, kind
