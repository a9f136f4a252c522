"""Write the golden vectors once. Not part of the test run; never rerun to make a test pass.

    .venv/bin/python golden/generate.py

The script deliberately shares no code with taskcore: documents are built as dicts in the
seed's declared field order by hand, serialized with ``json.dumps(ensure_ascii=False,
separators=(",", ":"))`` (whose escaping is exactly the seed's: quote, backslash, the five
named controls, other C0 controls as lowercase ``\\u00xx``, everything else raw UTF-8),
hashed with ``hashlib`` and signed with PyNaCl directly. ``tests/golden/test_vectors.py``
then recomputes every vector with taskcore and compares, so the two implementations check
each other.

An existing vector file is never overwritten: delete it by hand (and say why in the commit)
if a vector is truly wrong.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import nacl.signing

HERE = Path(__file__).resolve().parent
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
    if path.exists():
        print(f"keep {path.relative_to(HERE)} (vectors are written once)")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # ASCII-only files: every reader decodes them the same way, whatever its defaults.
    path.write_text(json.dumps(doc, ensure_ascii=True, indent=2) + "\n", encoding="ascii")
    print(f"wrote {path.relative_to(HERE)}")


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


def main() -> int:
    for name, description, unsigned in OBSERVATIONS:
        write(HERE / "observations" / f"{name}.json", observation_vector(name, description, unsigned))

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
        write(HERE / "digests" / f"{vector['name']}.json", vector)
    return 0


if __name__ == "__main__":
    sys.exit(main())
