"""An independent checker of the golden vectors: the standard library and PyNaCl, no taskcore.

Written from ``docs/contract.md`` and ``golden/README.md`` alone, as another implementation
of the v1 contract would be: its own strict JSON reader, its own tables of the types (field
order, JSON types, bounds, patterns) and of the shape rules the vectors exercise, its own
canonical serializer (the seed's escapes written out, not ``json.dumps``), domain-separated
SHA-256 from ``hashlib`` and Ed25519 from PyNaCl. It shares nothing with taskcore, so where
both agree on every vector the bytes and the refusals are the contract's, not one
implementation's habits. ``tests/golden/test_independent.py`` runs it over every vector and
checks, in a fresh interpreter, that it loads no taskcore module.

It covers the types the vectors use (the assertion and its parts, the task, subject and
entrypoint, the attempt, the claim and mutation requests) and the shape rules
``docs/contract.md`` gives for them; it is a checker of the vectors, not a server.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nacl.exceptions
import nacl.signing

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
MAX_BYTES = 256 * 1024
MAX_DEPTH = 64
U64 = 2**64 - 1

OBSERVATION_DOMAIN = "agentscm.agent-workflow-observation.v1"
DOMAINS = {
    "task": "agentscm.agent-workflow-task.v1",
    "subject": "agentscm.agent-workflow-subject.v1",
    "attempt": "agentscm.agent-workflow-attempt.v1",
}
REQUEST_DOMAIN_PREFIX = "agentscm.agent-workflow-request.v1."
CAPABILITY = "agentscm.agent-workflow-tasks/v1"


class Refusal(Exception):  # noqa: N818 - the contract's word for it
    """A refusal: the contract's error code and the JSON path (``None`` when it has none)."""

    def __init__(self, code: str, path: str | None) -> None:
        super().__init__(f"{code} at {path}")
        self.code = code
        self.path = path

    def under(self, prefix: str) -> Refusal:
        """The same refusal, its path nested under ``prefix``."""
        inner = self.path if self.path is not None else "$"
        return Refusal(self.code, prefix + inner[1:])


def key_path(path: str, key: str) -> str:
    """``$.key``, or ``$["key"]`` for a key that is not a plain name."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


# -- reading the text strictly ----------------------------------------------------------------


def read(data: bytes) -> Any:
    """The JSON tree of ``data``, or a :class:`Refusal` (docs/contract.md, "Decoding")."""
    if len(data) > MAX_BYTES:
        raise Refusal("PAYLOAD_TOO_LARGE", None)
    if data.startswith(b"\xef\xbb\xbf"):
        raise Refusal("MALFORMED_JSON", None)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refusal("MALFORMED_JSON", None) from None

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in items}) != len(items):
            raise Refusal("MALFORMED_JSON", None)
        return dict(items)

    try:
        tree = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_constant=lambda name: math.nan,  # NaN, Infinity: refused with their path
            parse_float=float,
        )
    except Refusal:
        raise
    except (ValueError, RecursionError):
        raise Refusal("MALFORMED_JSON", None) from None
    check_tree(tree)
    return tree


def check_tree(tree: Any) -> None:
    """Refuse what JSON text cannot carry, with the value's path, before any field."""
    stack: list[tuple[Any, int, str]] = [(tree, 1, "$")]
    while stack:
        node, level, path = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise Refusal("BAD_INPUT", path)
        if isinstance(node, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in node):
            raise Refusal("BAD_INPUT", path)
        if isinstance(node, dict | list) and level > MAX_DEPTH:
            raise Refusal("OUT_OF_BOUNDS", path)
        if isinstance(node, dict):
            for key, child in node.items():
                if any(0xD800 <= ord(c) <= 0xDFFF for c in key):
                    raise Refusal("BAD_INPUT", path)
                stack.append((child, level + 1, key_path(path, key)))
        elif isinstance(node, list):
            stack.extend((child, level + 1, f"{path}[{i}]") for i, child in enumerate(node))


# -- the type tables (docs/contract.md, "Types") ----------------------------------------------

ID = r"[A-Za-z0-9._-]{1,128}"
SEGMENT = r"(?!\.\.?(?:/|$))[A-Za-z0-9._-]{1,128}"

Spec = dict[str, Any]


def text(max_len: int, pattern: str | None = None, min_len: int | None = None) -> Spec:
    return {"kind": "string", "max": max_len, "min": min_len, "pattern": pattern}


def integer(lo: int = 0, hi: int = U64) -> Spec:
    return {"kind": "integer", "lo": lo, "hi": hi}


def array(item: Spec, max_len: int, min_len: int | None = None) -> Spec:
    return {"kind": "array", "item": item, "max": max_len, "min": min_len}


def one_of(*values: str) -> Spec:
    return {"kind": "enum", "values": values}


def obj(name: str) -> Spec:
    return {"kind": "object", "type": name}


def nullable(spec: Spec) -> Spec:
    return {**spec, "null": True}


VERSION: Spec = {"kind": "version"}
BOOLEAN: Spec = {"kind": "boolean"}
IDENT = text(128, ID)
HEX64 = text(64, r"[0-9a-f]{64}")
HEX128 = text(128, r"[0-9a-f]{128}")
REPO = text(257, rf"{SEGMENT}(?:/{SEGMENT})?")

TYPES: dict[str, list[tuple[str, Spec]]] = {
    "AgentIdentity": [("owner_id", IDENT), ("agent_id", IDENT)],
    "ExecutorBinding": [
        ("registration_id", IDENT),
        ("executor_id", IDENT),
        ("registration_epoch", integer(1)),
        ("verification_key_id", IDENT),
    ],
    "WorkflowTaskSubject": [
        ("version", VERSION),
        ("repository_id", REPO),
        ("profile_id", IDENT),
        ("target", text(256, r"[A-Za-z0-9._/-]{1,256}")),
        ("revision", HEX64),
        ("change_id", IDENT),
        ("change_version", integer(1)),
        ("context_digest", HEX64),
        ("policy_epoch", integer()),
        ("requirement_digest", HEX64),
        ("plan_digest", HEX64),
        ("skill_id", IDENT),
        ("skill_digest", HEX64),
        ("step_id", IDENT),
    ],
    "TaskCriterion": [
        ("criterion", IDENT),
        ("description", text(16384)),
        ("mode", one_of("controller_only", "observation_eligible")),
        ("required", BOOLEAN),
    ],
    "NamedReference": [("name", IDENT), ("sha256", HEX64), ("path", text(1024))],
    "InstructionEntrypoint": [
        ("capability", text(128)),
        ("schema_version", VERSION),
        ("workflow_digest", HEX64),
        ("policy_digest", HEX64),
        ("summary", text(16384)),
        ("criteria", array(obj("TaskCriterion"), 64, 1)),
        ("references", array(obj("NamedReference"), 32)),
        ("progression", one_of("agent_result", "collector", "controller")),
    ],
    "WorkflowTask": [
        ("version", VERSION),
        ("task_id", IDENT),
        ("subject", obj("WorkflowTaskSubject")),
        ("graph_status", one_of("required", "optional")),
        ("action_class", one_of("implement", "test", "build", "lint", "review")),
        ("depends_on", array(IDENT, 64)),
        ("entrypoint", obj("InstructionEntrypoint")),
    ],
    "TaskClaimRequest": [
        ("version", VERSION),
        ("request_id", IDENT),
        ("task_id", IDENT),
        ("task_digest", HEX64),
        ("execution_operation_id", IDENT),
        ("requested_lease_ms", integer(1000, 3_600_000)),
        ("executor", nullable(obj("ExecutorBinding"))),
    ],
    "TaskMutationRequest": [
        ("version", VERSION),
        ("request_id", IDENT),
        ("action", one_of("heartbeat", "cancel", "reconcile")),
        ("task_id", IDENT),
        ("task_digest", HEX64),
        ("attempt_id", IDENT),
        ("attempt_digest", HEX64),
        ("execution_operation_id", IDENT),
        ("executor", nullable(obj("ExecutorBinding"))),
        ("fence", integer(1)),
        ("reason", nullable(text(1024))),
    ],
    "WorkflowTaskAttempt": [
        ("version", VERSION),
        ("task_id", IDENT),
        ("task_digest", HEX64),
        ("attempt_id", IDENT),
        ("claim_request_id", IDENT),
        ("execution_operation_id", IDENT),
        ("agent", obj("AgentIdentity")),
        ("executor", nullable(obj("ExecutorBinding"))),
        ("fence", integer(1)),
        ("lease_ms", integer(1, 3_600_000)),
        ("issued_at_ms", integer()),
    ],
    "CriterionResult": [
        ("criterion", IDENT),
        ("outcome", one_of("passed", "failed", "uncertain", "not_claimed")),
        ("findings", array(text(4096), 32)),
        ("evidence_digests", array(HEX64, 32)),
    ],
    "ExecutorProvenance": [("observation_digest", HEX64), ("signature", HEX128)],
    "TaskResultAssertion": [
        ("version", VERSION),
        ("task_id", IDENT),
        ("task_digest", HEX64),
        ("attempt_id", IDENT),
        ("attempt_digest", HEX64),
        ("request_id", IDENT),
        ("execution_operation_id", IDENT),
        ("agent", obj("AgentIdentity")),
        ("executor", nullable(obj("ExecutorBinding"))),
        ("fence", integer(1)),
        (
            "trust_class",
            one_of(
                "agent_assertion",
                "registered_executor_observation",
                "independent_controller_evidence",
            ),
        ),
        ("outcome", one_of("passed", "failed", "uncertain")),
        ("criteria", array(obj("CriterionResult"), 64, 1)),
        ("executor_provenance", nullable(obj("ExecutorProvenance"))),
    ],
}


# -- the shape rules of each type (docs/contract.md, the paragraph under each table) -----------


def _unique(names: list[str], code: str, path: Callable[[int], str]) -> None:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise Refusal(code, path(index))
        seen.add(name)


def _reference_path(value: str) -> None:
    """docs/contract.md, "Named reference paths"."""
    bad = (
        not value
        or len(value) > 1024
        or not value.isascii()
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
        or "\\" in value
        or ":" in value
        or value.startswith("/")
        or any(part in ("", ".", "..") for part in value.split("/"))
    )
    if bad:
        raise Refusal("INVALID_PATH", "$.path")


def _criterion_result(row: dict[str, Any]) -> None:
    for index, finding in enumerate(row["findings"]):
        if "\x00" in finding:
            raise Refusal("INVALID_VALUE", f"$.findings[{index}]")


def _entrypoint(doc: dict[str, Any]) -> None:
    if doc["capability"] != CAPABILITY:
        raise Refusal("INVALID_VALUE", "$.capability")
    names = [row["criterion"] for row in doc["criteria"]]
    _unique(names, "INVALID_CRITERIA", lambda i: f"$.criteria[{i}].criterion")
    references = [ref["name"] for ref in doc["references"]]
    if len(set(references)) != len(references):
        raise Refusal("INVALID_VALUE", "$.references")


def _task(doc: dict[str, Any]) -> None:
    depends = doc["depends_on"]
    if doc["subject"]["step_id"] in depends or len(set(depends)) != len(depends):
        raise Refusal("INVALID_VALUE", "$.depends_on")
    if doc["entrypoint"]["workflow_digest"] != doc["subject"]["plan_digest"]:
        raise Refusal("BINDING_MISMATCH", "$.entrypoint.workflow_digest")
    if doc["action_class"] == "review":
        for index, row in enumerate(doc["entrypoint"]["criteria"]):
            if row["mode"] != "controller_only":
                raise Refusal("INVALID_CRITERIA", f"$.entrypoint.criteria[{index}].mode")


def _mutation(doc: dict[str, Any]) -> None:
    if doc["action"] == "heartbeat" and doc["reason"] is not None:
        raise Refusal("INVALID_VALUE", "$.reason")
    if doc["action"] != "heartbeat" and not doc["reason"]:
        raise Refusal("MISSING_FIELD", "$.reason")


def _assertion(doc: dict[str, Any]) -> None:
    trust = doc["trust_class"]
    if trust == "independent_controller_evidence":
        raise Refusal("INVALID_VALUE", "$.trust_class")
    observed = trust == "registered_executor_observation"
    if observed and doc["executor"] is None:
        raise Refusal("MISSING_FIELD", "$.executor")
    if not observed and doc["executor"] is not None:
        raise Refusal("INVALID_VALUE", "$.executor")
    if not observed and doc["executor_provenance"] is not None:
        raise Refusal("INVALID_VALUE", "$.executor_provenance")
    names = [row["criterion"] for row in doc["criteria"]]
    _unique(names, "INVALID_CRITERIA", lambda i: f"$.criteria[{i}].criterion")


RULES: dict[str, Callable[[dict[str, Any]], None]] = {
    "NamedReference": lambda doc: _reference_path(doc["path"]),
    "CriterionResult": _criterion_result,
    "InstructionEntrypoint": _entrypoint,
    "WorkflowTask": _task,
    "TaskMutationRequest": _mutation,
    "TaskResultAssertion": _assertion,
}


# -- decoding against the tables ----------------------------------------------------------------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", int: "integer", float: "number"}[
        type(value)
    ]


def decode(type_name: str, tree: Any) -> dict[str, Any]:
    """Check ``tree`` as a ``type_name``; return it with every object in declared field order.

    Order of the checks (golden/README.md): the object itself, its missing fields, its
    unknown fields, its fields' values in declared order, then its own shape rules.
    """
    if not isinstance(tree, dict):
        raise Refusal("WRONG_TYPE", "$")
    fields = TYPES[type_name]
    for name, _ in fields:
        if name not in tree:
            raise Refusal("MISSING_FIELD", key_path("$", name))
    unknown = sorted(set(tree) - {name for name, _ in fields})
    if unknown:
        raise Refusal("UNKNOWN_FIELD", key_path("$", unknown[0]))
    out: dict[str, Any] = {}
    for name, spec in fields:
        try:
            out[name] = _value(tree[name], spec)
        except Refusal as refusal:
            raise refusal.under(key_path("$", name)) from None
    rule = RULES.get(type_name)
    if rule is not None:
        rule(out)
    return out


def _value(value: Any, spec: Spec) -> Any:
    kind = spec["kind"]
    if value is None:
        if spec.get("null"):
            return None
        raise Refusal("WRONG_TYPE", "$")
    got = _json_type(value)
    if kind == "version":
        if got != "integer":
            raise Refusal("WRONG_TYPE", "$")
        if value != 1:
            raise Refusal("UNSUPPORTED_VERSION", "$")
        return value
    if kind == "string":
        if got == "string":
            if len(value) > spec["max"] or (spec["min"] is not None and len(value) < spec["min"]):
                raise Refusal("OUT_OF_BOUNDS", "$")
            if spec["pattern"] is not None and not re.fullmatch(spec["pattern"], value):
                raise Refusal("INVALID_VALUE", "$")
            return value
        raise Refusal("WRONG_TYPE", "$")
    if kind == "integer":
        if got != "integer":
            raise Refusal("WRONG_TYPE", "$")
        if not spec["lo"] <= value <= spec["hi"]:
            raise Refusal("OUT_OF_BOUNDS", "$")
        return value
    if kind == "boolean":
        if got != "boolean":
            raise Refusal("WRONG_TYPE", "$")
        return value
    if kind == "enum":
        if got != "string":
            raise Refusal("WRONG_TYPE", "$")
        if value not in spec["values"]:
            raise Refusal("INVALID_VALUE", "$")
        return value
    if kind == "array":
        if got == "array" and (
            len(value) > spec["max"] or (spec["min"] is not None and len(value) < spec["min"])
        ):
            raise Refusal("OUT_OF_BOUNDS", "$")
        if got != "array":
            raise Refusal("WRONG_TYPE", "$")
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_value(item, spec["item"]))
            except Refusal as refusal:
                raise refusal.under(f"$[{index}]") from None
        return items
    assert kind == "object"
    return decode(spec["type"], value)


# -- canonical bytes, digests, signatures -----------------------------------------------------

_NAMED = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def quote(value: str) -> str:
    """A JSON string with the seed's escapes: the named ones, other C0 controls as \\u00xx."""
    out = ['"']
    for ch in value:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def canonical(value: Any) -> str:
    """The canonical text (docs/contract.md, "Canonical bytes") of a decoded value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        assert 0 <= value <= U64
        return str(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical(item) for item in value) + "]"
    assert isinstance(value, dict)
    return "{" + ",".join(f"{quote(k)}:{canonical(v)}" for k, v in value.items()) + "}"


def domain_digest(domain: str, data: bytes) -> str:
    """``SHA-256(domain || 0x00 || u64be(len) || data)`` as 64 lowercase hex."""
    return hashlib.sha256(
        domain.encode("ascii") + b"\x00" + len(data).to_bytes(8, "big") + data
    ).hexdigest()


def signing_bytes(assertion: dict[str, Any]) -> bytes:
    """The observation signing bytes: the assertion with a null provenance."""
    return canonical({**assertion, "executor_provenance": None}).encode("utf-8")


def verify(assertion: dict[str, Any], public_key: str) -> None:
    """Verify a decoded assertion's observation signature, or raise the refusal."""
    provenance = assertion["executor_provenance"]
    if assertion["trust_class"] != "registered_executor_observation" or provenance is None:
        raise Refusal("INVALID_SIGNATURE", "$.executor_provenance")
    digest = domain_digest(OBSERVATION_DOMAIN, signing_bytes(assertion))
    if provenance["observation_digest"] != digest:
        raise Refusal("INVALID_SIGNATURE", "$.executor_provenance.observation_digest")
    try:
        key = nacl.signing.VerifyKey(bytes.fromhex(public_key))
        key.verify(bytes.fromhex(digest), bytes.fromhex(provenance["signature"]))
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.CryptoError, ValueError):
        raise Refusal("INVALID_SIGNATURE", "$.executor_provenance.signature") from None


# -- the vector sets ----------------------------------------------------------------------------

REQUEST_TYPES = {
    "claim": "TaskClaimRequest",
    "collector_claim": "TaskClaimRequest",
    "heartbeat": "TaskMutationRequest",
    "cancel": "TaskMutationRequest",
    "reconcile": "TaskMutationRequest",
    "result": "TaskResultAssertion",
}
DIGEST_TYPES = {
    "task": "WorkflowTask",
    "subject": "WorkflowTaskSubject",
    "attempt": "WorkflowTaskAttempt",
}


def vectors(kind: str) -> list[Path]:
    """The files of one vector set (``observations``, ``digests`` or ``negative``)."""
    return sorted((GOLDEN / kind).glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    """A vector file (ASCII JSON)."""
    return dict(json.loads(path.read_text(encoding="ascii")))


def as_bytes(document: Any) -> bytes:
    """A vector's document (a value) as the UTF-8 bytes a decoder is given."""
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


def check_observation(vector: dict[str, Any]) -> None:
    """Decode the assertion, rebuild its signing bytes, digest, key and signature."""
    assertion = decode("TaskResultAssertion", read(as_bytes(vector["assertion"])))
    signing = signing_bytes(assertion)
    assert signing == vector["signing_json"].encode("utf-8"), "signing bytes"
    digest = domain_digest(OBSERVATION_DOMAIN, signing)
    assert digest == vector["digest"], "digest"
    key = nacl.signing.SigningKey(bytes.fromhex(vector["secret_key_seed"]))
    assert bytes(key.verify_key).hex() == vector["public_key"], "public key"
    assert key.sign(bytes.fromhex(digest)).signature.hex() == vector["signature"], "signature"
    assert assertion["executor_provenance"] == {
        "observation_digest": digest,
        "signature": vector["signature"],
    }
    verify(assertion, vector["public_key"])


def check_digest(vector: dict[str, Any]) -> None:
    """Decode the input, rebuild its canonical text and its domain-separated digest."""
    kind = vector["kind"]
    if kind == "request":
        request_kind = vector["request_kind"]
        request = decode(REQUEST_TYPES[request_kind], read(as_bytes(vector["input"])))
        agent = decode("AgentIdentity", read(as_bytes(vector["agent"])))
        domain = REQUEST_DOMAIN_PREFIX + request_kind
        text_ = canonical({"kind": request_kind, "agent": agent, "request": request})
    else:
        value = decode(DIGEST_TYPES[kind], read(as_bytes(vector["input"])))
        domain = DOMAINS[kind]
        text_ = canonical(value)
    assert vector["domain"] == domain, "domain"
    assert text_ == vector["canonical_json"], "canonical text"
    assert domain_digest(domain, text_.encode("utf-8")) == vector["digest"], "digest"


def refusal_of(vector: dict[str, Any]) -> tuple[str, str | None] | None:
    """What this checker answers for a negative vector: ``(code, path)`` or ``None``."""
    try:
        value = decode(vector["type"], read(vector["document"].encode("utf-8")))
        if vector["check"] == "verify":
            verify(value, vector["public_key"])
    except Refusal as refusal:
        return refusal.code, refusal.path
    return None


def check_all() -> list[str]:
    """Every vector, checked; the names of those that failed, with why."""
    failed = []
    for kind, check in (("observations", check_observation), ("digests", check_digest)):
        for path in vectors(kind):
            try:
                check(load(path))
            except (AssertionError, Refusal) as err:
                failed.append(f"{kind}/{path.stem}: {err!r}")
    for path in vectors("negative"):
        vector = load(path)
        expected = (vector["error"]["code"], vector["error"]["path"])
        got = refusal_of(vector)
        if got != expected:
            failed.append(f"negative/{path.stem}: {got} instead of {expected}")
    return failed


if __name__ == "__main__":
    import sys

    problems = check_all()
    print("\n".join(problems) or "every vector checks")
    sys.exit(1 if problems else 0)
