"""Write the golden vectors once. Not part of the test run; never rerun to make a test pass.

    .venv/bin/python golden/generate.py [--out DIR]

The script deliberately shares no code with taskcore: documents are built as dicts in the
seed's declared field order by hand, serialized with ``json.dumps(ensure_ascii=False,
separators=(",", ":"))`` (whose escaping is exactly the seed's: quote, backslash, the five
named controls, other C0 controls as lowercase ``\\u00xx``, everything else raw UTF-8),
hashed with ``hashlib`` and signed with PyNaCl directly. ``tests/golden/test_vectors.py``
then recomputes every vector with taskcore and compares, so the two implementations check
each other.

An existing vector file is never overwritten: delete it by hand (and say why in the commit)
if a vector is truly wrong. A kept file whose bytes differ from what this script would write
now is reported and the script exits 1, so a change here that would alter a published vector
cannot pass unnoticed. ``--out DIR`` writes the whole set into another directory instead
(``tests/golden/test_generator.py`` does, and compares it with the committed files).

The negative vectors (``negative/``) are documents an implementation must refuse, each with
the error code and JSON path the contract (docs/contract.md) gives for it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import nacl.signing

HERE = Path(__file__).resolve().parent
OUT = HERE  # where main() writes; --out changes it
DIFFERS: list[str] = []
OBSERVATION_DOMAIN = "agentscm.agent-workflow-observation.v1"
TASK_DOMAIN = "agentscm.agent-workflow-task.v1"
SUBJECT_DOMAIN = "agentscm.agent-workflow-subject.v1"
ATTEMPT_DOMAIN = "agentscm.agent-workflow-attempt.v1"
REQUEST_DOMAIN_PREFIX = "agentscm.agent-workflow-request.v1."
U64_MAX = 2**64 - 1


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def digest(domain: str, data: bytes) -> str:
    h = hashlib.sha256()
    h.update(domain.encode("ascii") + b"\x00" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def test_seed(name: str) -> str:
    """A published, derived test seed: never a real key."""
    return hashlib.sha256(f"agent-task golden test key: {name}".encode()).hexdigest()


def h(label: str) -> str:
    """A readable, fixed 64-hex value."""
    return hashlib.sha256(label.encode()).hexdigest()


def write(path: Path, doc: dict[str, Any]) -> None:
    # ASCII-only files: every reader decodes them the same way, whatever its defaults.
    text = json.dumps(doc, ensure_ascii=True, indent=2) + "\n"
    shown = path.relative_to(OUT)
    if path.exists():
        if path.read_text(encoding="ascii") != text:
            DIFFERS.append(str(shown))
            print(f"DIFFERS {shown}: kept as written (vectors are written once)")
        else:
            print(f"keep {shown} (vectors are written once)")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")
    print(f"wrote {shown}")


# -- observations -----------------------------------------------------------------------------


def agent(owner: str = "acme", agent_id: str = "agent-1") -> dict[str, Any]:
    return {"owner_id": owner, "agent_id": agent_id}


def executor(epoch: int = 1, registration: str = "reg-1") -> dict[str, Any]:
    return {
        "registration_id": registration,
        "executor_id": "laptop-1",
        "registration_epoch": epoch,
        "verification_key_id": "k1",
    }


def row(
    criterion: str, outcome: str, findings: list[str] = (), evidence: list[str] = ()
) -> dict[str, Any]:
    return {
        "criterion": criterion,
        "outcome": outcome,
        "findings": list(findings),
        "evidence_digests": list(evidence),
    }


def observation(
    *,
    task_id: str = "task-1",
    attempt_id: str = "attempt-1",
    request_id: str = "result-1",
    execution_operation_id: str = "exec-1",
    agent_: dict[str, Any] | None = None,
    executor_: dict[str, Any] | None = None,
    fence: int = 1,
    outcome: str = "passed",
    criteria: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "version": 1,
        "task_id": task_id,
        "task_digest": h(f"task digest of {task_id}"),
        "attempt_id": attempt_id,
        "attempt_digest": h(f"attempt digest of {attempt_id}"),
        "request_id": request_id,
        "execution_operation_id": execution_operation_id,
        "agent": agent_ or agent(),
        "executor": executor_ or executor(),
        "fence": fence,
        "trust_class": "registered_executor_observation",
        "outcome": outcome,
        "criteria": criteria,
        "executor_provenance": None,
    }


def observation_vector(name: str, description: str, unsigned: dict[str, Any]) -> dict[str, Any]:
    assert unsigned["executor_provenance"] is None
    signing_json = compact(unsigned)
    obs_digest = digest(OBSERVATION_DOMAIN, signing_json)
    seed = test_seed(name)
    key = nacl.signing.SigningKey(bytes.fromhex(seed))
    signature = key.sign(bytes.fromhex(obs_digest)).signature.hex()
    signed = dict(unsigned)
    signed["executor_provenance"] = {"observation_digest": obs_digest, "signature": signature}
    return {
        "name": name,
        "description": description,
        "assertion": signed,
        "signing_json": signing_json.decode("utf-8"),
        "digest": obs_digest,
        "secret_key_seed": seed,
        "public_key": bytes(key.verify_key).hex(),
        "signature": signature,
    }


OBSERVATIONS = [
    (
        "minimal",
        "One passed criterion, empty findings and evidence arrays (serialized as []), fence 1.",
        observation(criteria=[row("unit-tests", "passed")]),
    ),
    (
        "escapes",
        "Every escape class in findings: quote and backslash, the five named controls "
        "(\\b \\t \\n \\f \\r), other C0 controls as lowercase \\u00xx (\\u0001, \\u000b, "
        "\\u001f), and '/', which is never escaped.",
        observation(
            outcome="failed",
            criteria=[
                row(
                    "unit-tests",
                    "failed",
                    [
                        'assert "a" == "b"',
                        "C:\\path\\to\\file and a\\\\double",
                        "bs\b tab\t nl\n ff\f cr\r",
                        "soh\x01 vt\x0b us\x1f esc\x1b",
                        "a/b/c and </script>",
                    ],
                )
            ],
        ),
    ),
    (
        "unicode",
        "Raw UTF-8 for non-ASCII, emoji outside the BMP, U+2028, U+2029 and DEL; no Unicode "
        "normalization (a decomposed e + U+0301 stays two code points).",
        observation(
            criteria=[
                row(
                    "unit-tests",
                    "passed",
                    [
                        "caf\u00e9 na\u00efve \u4e2d\u6587 \u0645\u0631\u062d\u0628\u0627",
                        "emoji \U0001f600 \U0001f680 flag \U0001f1e9\U0001f1ea",
                        "line\u2028separator paragraph\u2029separator",
                        "del\x7fchar",
                        "decomposed e\u0301 versus composed \u00e9",
                    ],
                )
            ],
        ),
    ),
    (
        "u64_max",
        "The largest unsigned 64-bit integers in fence and registration_epoch, written as "
        "plain digits (18446744073709551615), never as a float.",
        observation(
            fence=U64_MAX,
            executor_=executor(epoch=U64_MAX),
            criteria=[row("unit-tests", "passed")],
        ),
    ),
    (
        "multiple_criteria",
        "A mixed task: four rows in task order with findings and evidence digests, a failed "
        "optional row, an uncertain row and not_claimed for the controller-only review.",
        observation(
            outcome="failed",
            criteria=[
                row(
                    "unit-tests",
                    "passed",
                    ["412 passed in 9.1s", "coverage 93%"],
                    [h("junit.xml"), h("coverage.json")],
                ),
                row("lint", "failed", ["E501 line too long (src/a.py:3)"], [h("ruff.txt")]),
                row("docs", "uncertain", [], [h("sphinx.log"), h("warnings.txt"), h("x")]),
                row("review", "not_claimed"),
            ],
        ),
    ),
    (
        "long_identifiers",
        "128-character identifiers everywhere the seed's [A-Za-z0-9._-]{1,128} applies.",
        observation(
            task_id="t" * 128,
            attempt_id="a" * 127 + "Z",
            request_id="r." * 64,
            execution_operation_id="e-" * 64,
            agent_=agent("o_" * 64, "9" * 128),
            executor_=executor(registration="R" * 128),
            criteria=[row("c" * 128, "passed", [], [h("evidence")])],
        ),
    ),
]


# -- task, subject, attempt and request digests -----------------------------------------------


def subject(**changes: Any) -> dict[str, Any]:
    doc = {
        "version": 1,
        "repository_id": "acme.widgets",
        "profile_id": "default",
        "target": "refs/heads/main",
        "revision": h("revision"),
        "change_id": "change-7",
        "change_version": 3,
        "context_digest": h("context"),
        "policy_epoch": 0,
        "requirement_digest": h("requirement"),
        "plan_digest": h("plan"),
        "skill_id": "ci",
        "skill_digest": h("skill"),
        "step_id": "tests",
    }
    doc.update(changes)
    return doc


def criterion(name: str, description: str, mode: str, required: bool) -> dict[str, Any]:
    return {"criterion": name, "description": description, "mode": mode, "required": required}


def entrypoint(plan: str, criteria: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    doc = {
        "capability": "agentscm.agent-workflow-tasks/v1",
        "schema_version": 1,
        "workflow_digest": plan,
        "policy_digest": h("policy"),
        "summary": "Run the tests.",
        "criteria": criteria,
        "references": [],
        "progression": "agent_result",
    }
    doc.update(changes)
    return doc


def task(task_id: str, subj: dict[str, Any], ep: dict[str, Any], **changes: Any) -> dict[str, Any]:
    doc = {
        "version": 1,
        "task_id": task_id,
        "subject": subj,
        "graph_status": "required",
        "action_class": "test",
        "depends_on": [],
        "entrypoint": ep,
    }
    doc.update(changes)
    return doc


MIXED_SUBJECT = subject(change_version=U64_MAX, policy_epoch=U64_MAX, target="main")
TASK_MINIMAL = task(
    "task-minimal",
    subject(),
    entrypoint(
        h("plan"), [criterion("unit-tests", "the unit tests pass", "observation_eligible", True)]
    ),
)
TASK_MIXED = task(
    "task-mixed",
    MIXED_SUBJECT,
    entrypoint(
        h("plan"),
        [
            criterion("unit-tests", "pytest -q passes on the \"exact\" revision", "observation_eligible", True),
            criterion("lint", "ruff is clean\tno warnings", "observation_eligible", False),
            criterion("review", "an independent review approves \u2014 \U0001f50d", "controller_only", True),
        ],
        summary="Run the tests.\nThen lint.\u2028Paths use '/'; DEL is \x7f.",
        references=[
            {"name": "guide", "sha256": h("docs/testing.md"), "path": "docs/testing.md"},
            {"name": "policy", "sha256": h("POLICY"), "path": ".agent/policy v2.txt"},
        ],
        progression="collector",
    ),
    graph_status="optional",
    depends_on=["build", "lint-setup"],
)
ATTEMPT_WITH_EXECUTOR = {
    "version": 1,
    "task_id": "task-mixed",
    "task_digest": None,  # filled in from the task vector below
    "attempt_id": "attempt-1",
    "claim_request_id": "claim-1",
    "execution_operation_id": "exec-1",
    "agent": agent(),
    "executor": executor(),
    "fence": 1,
    "lease_ms": 60000,
    "issued_at_ms": 1700000000000,
}
ATTEMPT_WITHOUT_EXECUTOR = {
    "version": 1,
    "task_id": "task-minimal",
    "task_digest": None,
    "attempt_id": "attempt-9",
    "claim_request_id": "claim-9",
    "execution_operation_id": "exec-9",
    "agent": agent("acme", "agent-2"),
    "executor": None,
    "fence": U64_MAX,
    "lease_ms": 3600000,
    "issued_at_ms": 0,
}


def digest_vector(
    name: str, description: str, kind: str, domain: str, value: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    if kind == "request":
        canonical = compact({"kind": extra["request_kind"], "agent": extra["agent"], "request": value})
    else:
        canonical = compact(value)
    doc: dict[str, Any] = {"name": name, "description": description, "kind": kind}
    doc.update(extra)
    doc.update(
        {
            "domain": domain,
            "input": value,
            "canonical_json": canonical.decode("utf-8"),
            "digest": digest(domain, canonical),
        }
    )
    return doc


# -- negative vectors: documents an implementation must refuse ---------------------------------

ED25519_L = 2**252 + 27742317777372353535851937790883648493  # the group order
IDENTITY_POINT = "01" + "00" * 31  # the neutral element's encoding: a small-order key


def once(text: str, old: str, new: str) -> str:
    """``text`` with its one occurrence of ``old`` replaced (an exact, deliberate edit)."""
    assert text.count(old) == 1, (old, text.count(old))
    return text.replace(old, new)


def negative(
    name: str,
    description: str,
    type_name: str,
    document: str,
    code: str,
    path: str | None,
    *,
    public_key: str | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": name,
        "description": description,
        "type": type_name,
        "check": "decode" if public_key is None else "verify",
        "document": document,
    }
    if public_key is not None:
        doc["public_key"] = public_key
    doc["error"] = {"code": code, "path": path}
    return doc


def negative_vectors() -> list[dict[str, Any]]:
    """Each document differs from a valid one in exactly one way, named by its description."""
    base = observation(
        request_id="result-neg",
        criteria=[row("unit-tests", "passed", ["412 passed"], [h("junit.xml")])],
    )
    signed = observation_vector("negative", "", base)
    seed, key = signed["secret_key_seed"], signed["public_key"]
    assertion = signed["assertion"]
    text = compact(assertion).decode("utf-8")
    provenance = assertion["executor_provenance"]
    sig = provenance["signature"]
    signing_json = compact(dict(assertion, executor_provenance=None))
    signer = nacl.signing.SigningKey(bytes.fromhex(seed))

    def with_provenance(digest_hex: str, signature_hex: str) -> str:
        doc = dict(assertion, executor_provenance={
            "observation_digest": digest_hex, "signature": signature_hex,
        })
        return compact(doc).decode("utf-8")

    def sign_raw(message: bytes) -> str:
        return signer.sign(message).signature.hex()

    r_part, s_part = bytes.fromhex(sig)[:32], int.from_bytes(bytes.fromhex(sig)[32:], "little")
    s_plus_l = (s_part + ED25519_L).to_bytes(32, "little")
    other = nacl.signing.SigningKey(bytes.fromhex(test_seed("negative: another key")))
    A = "TaskResultAssertion"
    out = [
        # -- the shape of the document --------------------------------------------------------
        negative("unknown_field", "A field the type does not declare: `counts` is derived, never accepted.",
                 A, text[:-1] + ',"counts":{"passed":1}}', "UNKNOWN_FIELD", "$.counts"),
        negative("unknown_nested_field", "An undeclared field inside a nested object.",
                 A, once(text, '"verification_key_id":"k1"}', '"verification_key_id":"k1","extra":true}'),
                 "UNKNOWN_FIELD", "$.executor.extra"),
        negative("missing_field", "A declared field left out: a nullable field is sent as null, never omitted.",
                 A, once(text, ',"executor_provenance":' + compact(provenance).decode(), "") + "",
                 "MISSING_FIELD", "$.executor_provenance"),
        negative("missing_nested_field", "A nested object without one of its fields.",
                 A, once(text, ',"agent_id":"agent-1"', ""), "MISSING_FIELD", "$.agent.agent_id"),
        negative("duplicate_key", "The same key twice in one object (the first one valid).",
                 A, once(text, '{"version":1,', '{"version":1,"version":1,'), "MALFORMED_JSON", None),
        negative("duplicate_nested_key", "The same key twice in a nested object, with different values.",
                 A, once(text, '"owner_id":"acme",', '"owner_id":"acme","owner_id":"other",'),
                 "MALFORMED_JSON", None),
        negative("byte_order_mark", "The document starts with a UTF-8 byte order mark.",
                 A, "\ufeff" + text, "MALFORMED_JSON", None),
        negative("not_an_object", "An array where the document's object belongs.",
                 A, "[" + text + "]", "WRONG_TYPE", "$"),
        negative("too_deep", "More than 64 nested containers (the first one past the bound is named).",
                 A, text[:-1] + ',"x":' + "[" * 64 + "]" * 64 + "}", "OUT_OF_BOUNDS",
                 "$.x" + "[0]" * 63),
        # -- versions -------------------------------------------------------------------------
        negative("wrong_version", "Schema version 2: this contract is version 1.",
                 A, once(text, '{"version":1,', '{"version":2,'), "UNSUPPORTED_VERSION", "$.version"),
        negative("version_as_string", "The version as a string.",
                 A, once(text, '{"version":1,', '{"version":"1",'), "WRONG_TYPE", "$.version"),
        # -- numbers --------------------------------------------------------------------------
        negative("integer_as_float", "An integer written with a fraction (1.0).",
                 A, once(text, '"fence":1,', '"fence":1.0,'), "WRONG_TYPE", "$.fence"),
        negative("integer_with_exponent", "An integer written with an exponent (1e0).",
                 A, once(text, '"fence":1,', '"fence":1e0,'), "WRONG_TYPE", "$.fence"),
        negative("integer_with_leading_zero", "A leading zero (01) is not JSON.",
                 A, once(text, '"fence":1,', '"fence":01,'), "MALFORMED_JSON", None),
        negative("integer_negative_zero", "-0 is the integer 0, below the fence's minimum of 1.",
                 A, once(text, '"fence":1,', '"fence":-0,'), "OUT_OF_BOUNDS", "$.fence"),
        negative("integer_above_u64", "2^64: one above the largest unsigned 64-bit integer.",
                 A, once(text, '"fence":1,', '"fence":18446744073709551616,'), "OUT_OF_BOUNDS", "$.fence"),
        negative("integer_negative", "A negative integer: every wire integer is unsigned.",
                 A, once(text, '"registration_epoch":1,', '"registration_epoch":-1,'),
                 "OUT_OF_BOUNDS", "$.executor.registration_epoch"),
        negative("integer_as_string", "An integer sent as a string.",
                 A, once(text, '"fence":1,', '"fence":"1",'), "WRONG_TYPE", "$.fence"),
        negative("integer_as_boolean", "true where an integer belongs.",
                 A, once(text, '"fence":1,', '"fence":true,'), "WRONG_TYPE", "$.fence"),
        negative("not_a_number", "NaN is not JSON; its value is named.",
                 A, once(text, '"fence":1,', '"fence":NaN,'), "BAD_INPUT", "$.fence"),
        # -- strings --------------------------------------------------------------------------
        negative("identifier_over_bound", "A 129-character identifier: at most 128.",
                 A, once(text, '"task_id":"task-1"', '"task_id":"' + "t" * 129 + '"'),
                 "OUT_OF_BOUNDS", "$.task_id"),
        negative("finding_over_bound", "A 4097-character finding: at most 4096.",
                 A, once(text, '"findings":["412 passed"]', '"findings":["' + "f" * 4097 + '"]'),
                 "OUT_OF_BOUNDS", "$.criteria[0].findings[0]"),
        negative("findings_over_bound", "33 findings in one row: at most 32.",
                 A, once(text, '"findings":["412 passed"]', '"findings":[' + ",".join(['"f"'] * 33) + "]"),
                 "OUT_OF_BOUNDS", "$.criteria[0].findings"),
        negative("identifier_pattern", "An identifier with a space: [A-Za-z0-9._-]{1,128}.",
                 A, once(text, '"task_id":"task-1"', '"task_id":"task 1"'), "INVALID_VALUE", "$.task_id"),
        negative("empty_identifier", "An empty identifier.",
                 A, once(text, '"owner_id":"acme"', '"owner_id":""'), "INVALID_VALUE", "$.agent.owner_id"),
        negative("digest_uppercase", "A digest in uppercase hex: digests are lowercase.",
                 A, once(text, assertion["task_digest"], assertion["task_digest"].upper()),
                 "INVALID_VALUE", "$.task_digest"),
        negative("lone_surrogate", "A string holding a lone surrogate (escaped \\ud800).",
                 A, once(text, '"task_id":"task-1"', '"task_id":"\\ud800"'), "BAD_INPUT", "$.task_id"),
        negative("nul_in_finding", "A NUL character in a finding.",
                 A, once(text, '"findings":["412 passed"]', '"findings":["412\\u0000passed"]'),
                 "INVALID_VALUE", "$.criteria[0].findings[0]"),
        negative("unknown_enum_value", "An outcome that is not one of passed, failed, uncertain.",
                 A, once(text, '"outcome":"passed","criteria"', '"outcome":"ok","criteria"'),
                 "INVALID_VALUE", "$.outcome"),
        # -- the assertion's own rules --------------------------------------------------------
        negative("controller_trust_class", "independent_controller_evidence is never asserted.",
                 A, once(text, '"registered_executor_observation"', '"independent_controller_evidence"'),
                 "INVALID_VALUE", "$.trust_class"),
        negative("observation_without_executor", "A registered observation names its executor.",
                 A, once(text, '"executor":' + compact(assertion["executor"]).decode(), '"executor":null'),
                 "MISSING_FIELD", "$.executor"),
        negative("agent_assertion_with_executor", "An agent assertion names no executor.",
                 A, once(text, '"registered_executor_observation"', '"agent_assertion"'),
                 "INVALID_VALUE", "$.executor"),
        negative("no_criteria", "An assertion without a row: at least one.",
                 A, once(text, '"criteria":[' + compact(assertion["criteria"][0]).decode() + "]", '"criteria":[]'),
                 "OUT_OF_BOUNDS", "$.criteria"),
        negative("duplicate_criterion", "The same criterion in two rows (the second one is named).",
                 A, once(text, '"criteria":[' + compact(assertion["criteria"][0]).decode() + "]",
                         '"criteria":[' + compact(assertion["criteria"][0]).decode() + "," + compact(assertion["criteria"][0]).decode() + "]"),
                 "INVALID_CRITERIA", "$.criteria[1].criterion"),
        # -- signatures: the document decodes, verification with public_key refuses it ----------
        negative("bad_signature", "The last byte of the signature changed.",
                 A, with_provenance(provenance["observation_digest"], sig[:-2] + ("00" if sig[-2:] != "00" else "01")),
                 "INVALID_SIGNATURE", "$.executor_provenance.signature", public_key=key),
        negative("signature_of_another_key", "A valid signature of the right digest by another key.",
                 A, with_provenance(provenance["observation_digest"], other.sign(bytes.fromhex(provenance["observation_digest"])).signature.hex()),
                 "INVALID_SIGNATURE", "$.executor_provenance.signature", public_key=key),
        negative("signature_over_hex_text", "The key signed the 64 hex characters of the digest, not its 32 raw bytes.",
                 A, with_provenance(provenance["observation_digest"], sign_raw(provenance["observation_digest"].encode())),
                 "INVALID_SIGNATURE", "$.executor_provenance.signature", public_key=key),
        negative("signature_not_canonical", "S + L in place of S: the same point equation, a non-canonical scalar.",
                 A, with_provenance(provenance["observation_digest"], (r_part + s_plus_l).hex()),
                 "INVALID_SIGNATURE", "$.executor_provenance.signature", public_key=key),
        negative("small_order_public_key", "The public key is the neutral element (order 1) and the signature R = neutral, S = 0, which a check of [S]B = R + [k]A alone would accept for every message.",
                 A, with_provenance(provenance["observation_digest"], IDENTITY_POINT + "00" * 32),
                 "INVALID_SIGNATURE", "$.executor_provenance.signature", public_key=IDENTITY_POINT),
        negative("wrong_digest_domain", "observation_digest computed over the right bytes under the task domain (agentscm.agent-workflow-task.v1), and validly signed.",
                 A, with_provenance(digest(TASK_DOMAIN, signing_json), signer.sign(bytes.fromhex(digest(TASK_DOMAIN, signing_json))).signature.hex()),
                 "INVALID_SIGNATURE", "$.executor_provenance.observation_digest", public_key=key),
        negative("digest_without_length", "observation_digest without the u64 length: SHA-256(domain || 0x00 || bytes), validly signed.",
                 A, with_provenance(hashlib.sha256(OBSERVATION_DOMAIN.encode() + b"\x00" + signing_json).hexdigest(),
                                    sign_raw(hashlib.sha256(OBSERVATION_DOMAIN.encode() + b"\x00" + signing_json).digest())),
                 "INVALID_SIGNATURE", "$.executor_provenance.observation_digest", public_key=key),
    ]
    # An agent assertion carries no signature to verify.
    agent_only = dict(assertion, trust_class="agent_assertion", executor=None, executor_provenance=None)
    out.append(negative("unsigned_agent_assertion", "An agent assertion (valid, unsigned) given to signature verification.",
                        A, compact(agent_only).decode("utf-8"), "INVALID_SIGNATURE", "$.executor_provenance", public_key=key))

    # -- a task, a claim, a mutation and an attempt ----------------------------------------------
    T = "WorkflowTask"
    task_text = compact(TASK_MIXED).decode("utf-8")
    plan = TASK_MIXED["subject"]["plan_digest"]
    out += [
        negative("entrypoint_wrong_schema_version", "The entrypoint's schema_version 2.",
                 T, once(task_text, '"schema_version":1', '"schema_version":2'), "UNSUPPORTED_VERSION", "$.entrypoint.schema_version"),
        negative("entrypoint_wrong_capability", "Another capability string.",
                 T, once(task_text, '"capability":"agentscm.agent-workflow-tasks/v1"', '"capability":"agentscm.agent-workflow-tasks/v2"'),
                 "INVALID_VALUE", "$.entrypoint.capability"),
        negative("reference_path_escapes", "A named reference path with a '..' component.",
                 T, once(task_text, '"path":"docs/testing.md"', '"path":"docs/../../etc/passwd"'),
                 "INVALID_PATH", "$.entrypoint.references[0].path"),
        negative("workflow_digest_mismatch", "entrypoint.workflow_digest other than subject.plan_digest.",
                 T, once(task_text, '"workflow_digest":"' + plan + '"', '"workflow_digest":"' + h("another plan") + '"'),
                 "BINDING_MISMATCH", "$.entrypoint.workflow_digest"),
        negative("step_depends_on_itself", "depends_on names the task's own step.",
                 T, once(task_text, '"depends_on":["build","lint-setup"]', '"depends_on":["build","tests"]'),
                 "INVALID_VALUE", "$.depends_on"),
        negative("review_step_not_controller_only", "A review step with an observation-eligible criterion.",
                 T, once(task_text, '"action_class":"test"', '"action_class":"review"'),
                 "INVALID_CRITERIA", "$.entrypoint.criteria[0].mode"),
        negative("change_version_zero", "change_version 0: at least 1.",
                 T, once(task_text, '"change_version":18446744073709551615', '"change_version":0'),
                 "OUT_OF_BOUNDS", "$.subject.change_version"),
    ]
    claim = {
        "version": 1, "request_id": "claim-1", "task_id": "task-mixed",
        "task_digest": digest(TASK_DOMAIN, compact(TASK_MIXED)), "execution_operation_id": "exec-1",
        "requested_lease_ms": 60000, "executor": executor(),
    }
    claim_text = compact(claim).decode("utf-8")
    out.append(negative("lease_below_minimum", "A claim asking for a 999 ms lease: 1000 to 3600000.",
                        "TaskClaimRequest", once(claim_text, '"requested_lease_ms":60000', '"requested_lease_ms":999'),
                        "OUT_OF_BOUNDS", "$.requested_lease_ms"))
    mutation = {
        "version": 1, "request_id": "hb-1", "action": "heartbeat", "task_id": "task-mixed",
        "task_digest": claim["task_digest"], "attempt_id": "attempt-1", "attempt_digest": h("attempt"),
        "execution_operation_id": "exec-1", "executor": executor(), "fence": 1, "reason": None,
    }
    mutation_text = compact(mutation).decode("utf-8")
    out += [
        negative("heartbeat_with_reason", "A heartbeat carries no reason.",
                 "TaskMutationRequest", once(mutation_text, '"reason":null', '"reason":"why"'), "INVALID_VALUE", "$.reason"),
        negative("cancel_without_reason", "A cancel needs a reason.",
                 "TaskMutationRequest", once(once(mutation_text, '"action":"heartbeat"', '"action":"cancel"'), '"request_id":"hb-1"', '"request_id":"cancel-1"'),
                 "MISSING_FIELD", "$.reason"),
    ]
    attempt = dict(ATTEMPT_WITH_EXECUTOR, task_digest=claim["task_digest"])
    attempt_text = compact(attempt).decode("utf-8")
    out.append(negative("attempt_lease_zero", "An attempt with a lease of 0 ms: at least 1.",
                        "WorkflowTaskAttempt", once(attempt_text, '"lease_ms":60000', '"lease_ms":0'),
                        "OUT_OF_BOUNDS", "$.lease_ms"))
    return out


def main() -> int:
    for name, description, unsigned in OBSERVATIONS:
        write(OUT / "observations" / f"{name}.json", observation_vector(name, description, unsigned))

    minimal_digest = digest(TASK_DOMAIN, compact(TASK_MINIMAL))
    mixed_digest = digest(TASK_DOMAIN, compact(TASK_MIXED))
    ATTEMPT_WITH_EXECUTOR["task_digest"] = mixed_digest
    ATTEMPT_WITHOUT_EXECUTOR["task_digest"] = minimal_digest
    attempt_digest = digest(ATTEMPT_DOMAIN, compact(ATTEMPT_WITH_EXECUTOR))

    claim = {
        "version": 1,
        "request_id": "claim-1",
        "task_id": "task-mixed",
        "task_digest": mixed_digest,
        "execution_operation_id": "exec-1",
        "requested_lease_ms": 60000,
        "executor": executor(),
    }

    def mutation(action: str, request_id: str, reason: str | None) -> dict[str, Any]:
        return {
            "version": 1,
            "request_id": request_id,
            "action": action,
            "task_id": "task-mixed",
            "task_digest": mixed_digest,
            "attempt_id": "attempt-1",
            "attempt_digest": attempt_digest,
            "execution_operation_id": "exec-1",
            "executor": executor(),
            "fence": 1,
            "reason": reason,
        }

    result = observation(
        task_id="task-minimal",
        attempt_id="attempt-9",
        request_id="result-9",
        execution_operation_id="exec-9",
        agent_=agent("acme", "agent-2"),
        fence=U64_MAX,
        criteria=[row("unit-tests", "passed", ["412 passed"], [h("junit.xml")])],
    )
    result["task_digest"] = minimal_digest
    result["attempt_digest"] = digest(ATTEMPT_DOMAIN, compact(ATTEMPT_WITHOUT_EXECUTOR))
    result["trust_class"] = "agent_assertion"
    result["executor"] = None

    vectors = [
        digest_vector(
            "task_minimal",
            "One observation-eligible criterion, no references, no dependencies, policy_epoch 0.",
            "task", TASK_DOMAIN, TASK_MINIMAL,
        ),
        digest_vector(
            "task_mixed",
            "Three criteria (one controller-only), two references, two dependencies, an "
            "optional collector step; escapes, U+2028, DEL and emoji in free text; "
            "change_version and policy_epoch at 2^64-1.",
            "task", TASK_DOMAIN, TASK_MIXED,
        ),
        digest_vector(
            "subject_mixed", "The subject of task_mixed on its own.", "subject",
            SUBJECT_DOMAIN, MIXED_SUBJECT,
        ),
        digest_vector(
            "attempt_with_executor",
            "An attempt of task_mixed bound to an enrolled executor, fence 1.",
            "attempt", ATTEMPT_DOMAIN, ATTEMPT_WITH_EXECUTOR,
        ),
        digest_vector(
            "attempt_without_executor",
            "An agent-only attempt of task_minimal: executor null, issued_at_ms 0, fence "
            "2^64-1, the longest lease.",
            "attempt", ATTEMPT_DOMAIN, ATTEMPT_WITHOUT_EXECUTOR,
        ),
        digest_vector(
            "request_claim", "The claim that made attempt_with_executor.", "request",
            REQUEST_DOMAIN_PREFIX + "claim", claim, request_kind="claim", agent=agent(),
        ),
        digest_vector(
            "request_collector_claim",
            "The same claim bytes hashed as a collector claim: another domain, another digest.",
            "request", REQUEST_DOMAIN_PREFIX + "collector_claim", claim,
            request_kind="collector_claim", agent=agent(),
        ),
        digest_vector(
            "request_heartbeat", "A heartbeat of attempt_with_executor (reason null).",
            "request", REQUEST_DOMAIN_PREFIX + "heartbeat", mutation("heartbeat", "hb-1", None),
            request_kind="heartbeat", agent=agent(),
        ),
        digest_vector(
            "request_cancel",
            "A cancel with a reason holding a quote, a newline and non-ASCII text.",
            "request", REQUEST_DOMAIN_PREFIX + "cancel",
            mutation("cancel", "cancel-1", 'wrong "branch"\nabgebrochen \u2013 sp\u00e4ter'),
            request_kind="cancel", agent=agent(),
        ),
        digest_vector(
            "request_reconcile", "An operator's reconcile of the same attempt.", "request",
            REQUEST_DOMAIN_PREFIX + "reconcile",
            mutation("reconcile", "reconcile-1", "executor host lost power"),
            request_kind="reconcile", agent=agent("acme", "operator-1"),
        ),
        digest_vector(
            "request_result",
            "An agent assertion for attempt_without_executor as a result request.",
            "request", REQUEST_DOMAIN_PREFIX + "result", result,
            request_kind="result", agent=agent("acme", "agent-2"),
        ),
    ]
    for vector in vectors:
        write(OUT / "digests" / f"{vector['name']}.json", vector)
    for vector in negative_vectors():
        write(OUT / "negative" / f"{vector['name']}.json", vector)
    if DIFFERS:
        print(f"{len(DIFFERS)} kept vector(s) differ from what this script writes now: "
              "the script changed, the vectors did not", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--out"]:
        OUT = Path(sys.argv[2]).resolve()
    sys.exit(main())
