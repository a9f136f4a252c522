"""Recompute every golden vector in ``golden/`` from its input and compare.

The vectors were written once by ``golden/generate.py``, which shares no code with taskcore
(hand-ordered dicts, ``json.dumps``, ``hashlib``, PyNaCl). Here taskcore decodes each input
strictly and must reproduce the exact signing/canonical bytes, digest, public key and
signature. A failure means taskcore changed its bytes: fix taskcore, never the vector.
"""

import json
from pathlib import Path

import pytest
from taskcore.canonical import canonical_json
from taskcore.codec import Codec
from taskcore.contract import (
    ExecutorProvenance,
    TaskClaimRequest,
    TaskMutationRequest,
    TaskResultAssertion,
    WorkflowTask,
    WorkflowTaskAttempt,
    WorkflowTaskSubject,
    attempt_digest,
    observation_digest,
    observation_signing_bytes,
    request_canonical_bytes,
    request_digest,
    sign_observation,
    subject_digest,
    task_digest,
    verify_observation,
)
from taskcore.contract.common import AgentIdentity
from taskcore.digest import (
    ATTEMPT_DOMAIN,
    OBSERVATION_DOMAIN,
    SUBJECT_DOMAIN,
    TASK_DOMAIN,
    domain_digest,
    request_domain,
)
from taskcore.limits import ASSERTION_MAX_BYTES
from taskcore.signing import public_key_hex, sign_digest

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
OBSERVATIONS = sorted((GOLDEN / "observations").glob("*.json"))
DIGESTS = sorted((GOLDEN / "digests").glob("*.json"))
CODEC = Codec()

OBSERVATION_KEYS = {
    "name",
    "description",
    "assertion",
    "signing_json",
    "digest",
    "secret_key_seed",
    "public_key",
    "signature",
}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def by_name(paths: list[Path]) -> dict[str, dict]:
    return {p.stem: load(p) for p in paths}


def test_the_vector_sets_are_present():
    assert len(OBSERVATIONS) >= 6
    assert len(DIGESTS) >= 11


# -- observations -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", OBSERVATIONS, ids=lambda p: p.stem)
def test_observation_vector_has_exactly_the_documented_keys(path):
    vector = load(path)
    assert set(vector) == OBSERVATION_KEYS
    assert vector["name"] == path.stem


@pytest.mark.parametrize("path", OBSERVATIONS, ids=lambda p: p.stem)
def test_observation_vector_recomputes_from_its_assertion(path):
    vector = load(path)
    travelled = json.dumps(vector["assertion"], ensure_ascii=False).encode("utf-8")
    assertion = CODEC.decode(TaskResultAssertion, travelled, max_bytes=ASSERTION_MAX_BYTES)
    signing = observation_signing_bytes(assertion)
    assert signing == vector["signing_json"].encode("utf-8")
    assert observation_digest(assertion) == vector["digest"]
    assert domain_digest(OBSERVATION_DOMAIN, signing) == vector["digest"]
    assert public_key_hex(vector["secret_key_seed"]) == vector["public_key"]
    assert sign_digest(vector["secret_key_seed"], vector["digest"]) == vector["signature"]
    assert assertion.executor_provenance == ExecutorProvenance(
        observation_digest=vector["digest"], signature=vector["signature"]
    )
    verify_observation(assertion, vector["public_key"])


@pytest.mark.parametrize("path", OBSERVATIONS, ids=lambda p: p.stem)
def test_signing_the_unsigned_assertion_reproduces_the_vector(path):
    vector = load(path)
    unsigned = dict(vector["assertion"], executor_provenance=None)
    assertion = CODEC.structure(unsigned, TaskResultAssertion)
    signed = sign_observation(assertion, vector["secret_key_seed"])
    assert CODEC.unstructure(signed) == vector["assertion"]
    assert json.loads(vector["signing_json"]) == unsigned


def test_the_observation_vectors_cover_every_class_the_seed_names():
    texts = {p.stem: load(p)["signing_json"] for p in OBSERVATIONS}
    everything = "".join(texts.values())
    for escape in ('\\"', "\\\\", "\\b", "\\t", "\\n", "\\f", "\\r", "\\u0001", "\\u001f"):
        assert escape in everything, escape
    for raw in ("/", "\x7f", "\u2028", "\u2029", "\u00e9", "e\u0301", "\U0001f600"):
        assert raw in everything, repr(raw)
    assert "\\u001F" not in everything  # lowercase hex only
    assert "18446744073709551615" in everything
    assert '"findings":[],"evidence_digests":[]' in everything
    multi = json.loads(texts["multiple_criteria"])["criteria"]
    assert len(multi) >= 2
    assert sum(1 for row in multi if row["findings"] and row["evidence_digests"]) >= 2
    assert all(json.loads(t)["executor_provenance"] is None for t in texts.values())


def test_no_vector_key_is_reused():
    seeds = [load(p)["secret_key_seed"] for p in OBSERVATIONS]
    assert len(set(seeds)) == len(seeds)


# -- task, subject, attempt and request digests -----------------------------------------------

REQUEST_TYPES = {
    "claim": TaskClaimRequest,
    "collector_claim": TaskClaimRequest,
    "heartbeat": TaskMutationRequest,
    "cancel": TaskMutationRequest,
    "reconcile": TaskMutationRequest,
    "result": TaskResultAssertion,
}
COMMON_KEYS = {"name", "description", "kind", "domain", "input", "canonical_json", "digest"}


def _recompute(vector: dict) -> tuple[bytes, str]:
    kind = vector["kind"]
    if kind == "task":
        task = CODEC.structure(vector["input"], WorkflowTask)
        assert vector["domain"] == TASK_DOMAIN
        return canonical_json(task), task_digest(task)
    if kind == "subject":
        subject = CODEC.structure(vector["input"], WorkflowTaskSubject)
        assert vector["domain"] == SUBJECT_DOMAIN
        return canonical_json(subject), subject_digest(subject)
    if kind == "attempt":
        attempt = CODEC.structure(vector["input"], WorkflowTaskAttempt)
        assert vector["domain"] == ATTEMPT_DOMAIN
        return canonical_json(attempt), attempt_digest(attempt)
    assert kind == "request"
    request_kind = vector["request_kind"]
    request = CODEC.structure(vector["input"], REQUEST_TYPES[request_kind])
    agent = CODEC.structure(vector["agent"], AgentIdentity)
    assert vector["domain"] == request_domain(request_kind)
    return (
        request_canonical_bytes(request_kind, request, agent),
        request_digest(request_kind, request, agent),
    )


@pytest.mark.parametrize("path", DIGESTS, ids=lambda p: p.stem)
def test_digest_vector_has_exactly_the_documented_keys(path):
    vector = load(path)
    expected = COMMON_KEYS | ({"request_kind", "agent"} if vector["kind"] == "request" else set())
    assert set(vector) == expected
    assert vector["name"] == path.stem


@pytest.mark.parametrize("path", DIGESTS, ids=lambda p: p.stem)
def test_digest_vector_recomputes_from_its_input(path):
    vector = load(path)
    canonical, digest = _recompute(vector)
    assert canonical == vector["canonical_json"].encode("utf-8")
    assert digest == vector["digest"]
    assert domain_digest(vector["domain"], canonical) == vector["digest"]


def test_digest_vectors_chain_task_attempt_and_requests():
    vectors = by_name(DIGESTS)
    mixed, minimal = vectors["task_mixed"]["digest"], vectors["task_minimal"]["digest"]
    attempt = vectors["attempt_with_executor"]
    assert attempt["input"]["task_digest"] == mixed
    assert vectors["attempt_without_executor"]["input"]["task_digest"] == minimal
    for name in ("request_heartbeat", "request_cancel", "request_reconcile"):
        assert vectors[name]["input"]["attempt_digest"] == attempt["digest"]
    result = vectors["request_result"]["input"]
    assert result["attempt_digest"] == vectors["attempt_without_executor"]["digest"]
    assert vectors["task_mixed"]["input"]["subject"] == vectors["subject_mixed"]["input"]
    assert vectors["request_claim"]["digest"] != vectors["request_collector_claim"]["digest"]
    assert vectors["request_claim"]["input"] == vectors["request_collector_claim"]["input"]


def test_digest_vectors_cover_zero_and_the_largest_u64():
    texts = "".join(load(p)["canonical_json"] for p in DIGESTS)
    assert '"policy_epoch":0' in texts
    assert '"issued_at_ms":0' in texts
    assert "18446744073709551615" in texts
