import hashlib
import json

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.contract import (
    CriterionOutcome,
    CriterionResult,
    ExecutorProvenance,
    TrustClass,
    observation_digest,
    observation_signing_bytes,
    sign_observation,
    verify_observation,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import U64_MAX
from taskcore.signing import sign_digest

from . import samples
from .strategies import assertions
from .wire import CODEC, changed

ESCAPES_AND_UNICODE = (
    'quote " backslash \\ slash / bs \b tab \t nl \n ff \f cr \r '
    "nul-free controls \x01 \x0b \x1f del \x7f "
    "é ü 中文 emoji 😀 ls \u2028 ps \u2029 combining e\u0301"
)


def _independent_signing_json(assertion) -> bytes:
    """An oracle that shares no code with taskcore.canonical.

    ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` over dicts built in the seed's
    field order escapes exactly the seed's classes (quote, backslash, the five named controls,
    other C0 controls as lowercase \\u00xx) and writes everything else raw.
    """
    tree = CODEC.unstructure(assertion)
    ordered = {
        key: tree[key]
        for key in (
            "version",
            "task_id",
            "task_digest",
            "attempt_id",
            "attempt_digest",
            "request_id",
            "execution_operation_id",
            "agent",
            "executor",
            "fence",
            "trust_class",
            "outcome",
            "criteria",
        )
    }
    ordered["agent"] = {k: tree["agent"][k] for k in ("owner_id", "agent_id")}
    if tree["executor"] is not None:
        ordered["executor"] = {
            k: tree["executor"][k]
            for k in ("registration_id", "executor_id", "registration_epoch", "verification_key_id")
        }
    ordered["criteria"] = [
        {k: row[k] for k in ("criterion", "outcome", "findings", "evidence_digests")}
        for row in tree["criteria"]
    ]
    ordered["executor_provenance"] = None
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _digest_by_hand(data: bytes) -> str:
    domain = b"agentscm.agent-workflow-observation.v1"
    return hashlib.sha256(domain + b"\x00" + len(data).to_bytes(8, "big") + data).hexdigest()


# -- signing bytes ----------------------------------------------------------------------------


def test_signing_bytes_of_a_minimal_observation_are_exact():
    rows = (
        CriterionResult(
            criterion="unit-tests",
            outcome=CriterionOutcome.PASSED,
            findings=(),
            evidence_digests=(),
        ),
    )
    assertion = samples.assertion(
        task_digest="a" * 64, attempt_digest="b" * 64, criteria=rows, fence=U64_MAX
    )
    expected = (
        '{"version":1,"task_id":"task-1","task_digest":"' + "a" * 64 + '",'
        '"attempt_id":"attempt-1","attempt_digest":"' + "b" * 64 + '",'
        '"request_id":"result-1","execution_operation_id":"exec-1",'
        '"agent":{"owner_id":"acme","agent_id":"agent-1"},'
        '"executor":{"registration_id":"reg-1","executor_id":"laptop-1",'
        '"registration_epoch":1,"verification_key_id":"k1"},'
        '"fence":18446744073709551615,"trust_class":"registered_executor_observation",'
        '"outcome":"passed","criteria":[{"criterion":"unit-tests","outcome":"passed",'
        '"findings":[],"evidence_digests":[]}],"executor_provenance":null}'
    ).encode()
    assert observation_signing_bytes(assertion) == expected


def test_every_escape_class_and_raw_unicode_in_findings():
    rows = samples.rows()
    rows = (attrs.evolve(rows[0], findings=(ESCAPES_AND_UNICODE,)), *rows[1:])
    raw = observation_signing_bytes(samples.assertion(criteria=rows))
    expected_finding = (
        '"quote \\" backslash \\\\ slash / bs \\b tab \\t nl \\n ff \\f cr \\r '
        "nul-free controls \\u0001 \\u000b \\u001f del \x7f "
        'é ü 中文 emoji 😀 ls \u2028 ps \u2029 combining e\u0301"'
    ).encode("utf-8")
    assert expected_finding in raw
    assert b"\\u001F" not in raw  # lowercase hex only
    assert b"\\/" not in raw  # '/' is never escaped
    assert b"\\u2028" not in raw  # U+2028 travels raw
    assert "e\u0301".encode() in raw  # no Unicode normalization to U+00E9
    assert not raw.endswith(b"\n")
    assert not raw.startswith(b"\xef\xbb\xbf")


def test_executor_provenance_is_serialized_as_null_not_omitted():
    signed = sign_observation(samples.assertion(), samples.SEED)
    raw = observation_signing_bytes(signed)
    assert raw.endswith(b',"executor_provenance":null}')
    assert observation_signing_bytes(signed) == observation_signing_bytes(samples.assertion())


def test_array_order_is_preserved_and_empty_arrays_are_brackets():
    rows = samples.rows()
    first = attrs.evolve(
        rows[0], findings=("second", "first"), evidence_digests=("b" * 64, "a" * 64)
    )
    raw = observation_signing_bytes(samples.assertion(criteria=(first, *rows[1:])))
    assert b'"findings":["second","first"]' in raw
    assert b'"evidence_digests":["' + b"b" * 64 + b'","' + b"a" * 64 + b'"]' in raw
    assert b'"findings":[],"evidence_digests":[]' in raw
    reordered = samples.assertion(criteria=(first, rows[2], rows[1]))
    assert observation_digest(reordered) != observation_digest(
        samples.assertion(criteria=(first, *rows[1:]))
    )


@given(assertions(trust_class=TrustClass.REGISTERED_EXECUTOR_OBSERVATION))
def test_signing_bytes_equal_an_independent_serde_style_encoder(assertion):
    assert observation_signing_bytes(assertion) == _independent_signing_json(assertion)


@given(assertions(trust_class=TrustClass.REGISTERED_EXECUTOR_OBSERVATION))
def test_digest_is_sha256_over_domain_nul_length_and_bytes(assertion):
    raw = observation_signing_bytes(assertion)
    assert observation_digest(assertion) == _digest_by_hand(raw)


# -- signing and strict verification ----------------------------------------------------------


def test_a_signed_observation_verifies_with_the_enrolled_key():
    signed = sign_observation(samples.assertion(), samples.SEED)
    assert signed.executor_provenance is not None
    assert signed.executor_provenance.observation_digest == observation_digest(signed)
    assert len(signed.executor_provenance.signature) == 128
    verify_observation(signed, samples.PUBLIC)


def test_the_signature_is_ed25519_over_the_raw_digest_bytes():
    signed = sign_observation(samples.assertion(), samples.SEED)
    digest = observation_digest(signed)
    assert signed.executor_provenance.signature == sign_digest(samples.SEED, digest)


def _expect_invalid_signature(assertion, public=samples.PUBLIC):
    with pytest.raises(TaskError) as info:
        verify_observation(assertion, public)
    assert info.value.code is ErrorCode.INVALID_SIGNATURE
    return info.value


def test_another_key_fails_closed():
    _expect_invalid_signature(
        sign_observation(samples.assertion(), samples.SEED), samples.OTHER_PUBLIC
    )


def test_an_unsigned_observation_fails_closed():
    err = _expect_invalid_signature(samples.assertion())
    assert err.path == "$.executor_provenance"


def test_an_agent_assertion_cannot_be_signed_or_verified():
    agent = samples.assertion(trust_class=TrustClass.AGENT_ASSERTION, executor=None)
    with pytest.raises(TaskError) as info:
        sign_observation(agent, samples.SEED)
    assert info.value.code is ErrorCode.INVALID_VALUE
    _expect_invalid_signature(agent)


def test_a_provenance_digest_that_is_not_the_recomputed_digest_fails():
    signed = sign_observation(samples.assertion(), samples.SEED)
    lying = attrs.evolve(
        signed,
        executor_provenance=attrs.evolve(signed.executor_provenance, observation_digest="0" * 64),
    )
    err = _expect_invalid_signature(lying)
    assert err.path == "$.executor_provenance.observation_digest"


def test_a_valid_signature_over_another_digest_fails():
    signed = sign_observation(samples.assertion(), samples.SEED)
    other = sign_digest(samples.SEED, "0" * 64)
    forged = attrs.evolve(
        signed,
        executor_provenance=ExecutorProvenance(
            observation_digest=signed.executor_provenance.observation_digest, signature=other
        ),
    )
    _expect_invalid_signature(forged)


SIGNED_FIELDS = [
    f.name
    for f in attrs.fields(type(samples.assertion()))
    if f.name not in ("version", "executor_provenance", "trust_class", "executor")
]


@pytest.mark.parametrize("name", SIGNED_FIELDS)
def test_changing_any_signed_field_after_signing_fails_verification(name):
    signed = sign_observation(samples.assertion(), samples.SEED)
    value = getattr(signed, name)
    if name == "agent":
        new = attrs.evolve(value, agent_id="agent-2")
    elif name == "criteria":
        new = (attrs.evolve(value[0], findings=("added",)), *value[1:])
    else:
        new = changed(value)
    _expect_invalid_signature(attrs.evolve(signed, **{name: new}))


def test_changing_the_executor_binding_after_signing_fails_verification():
    signed = sign_observation(samples.assertion(), samples.SEED)
    moved = attrs.evolve(signed, executor=attrs.evolve(samples.EXECUTOR, registration_epoch=2))
    _expect_invalid_signature(moved)


@given(assertions(trust_class=TrustClass.REGISTERED_EXECUTOR_OBSERVATION), st.data())
def test_sign_then_verify_and_any_flipped_signature_bit_fails(assertion, data):
    signed = sign_observation(assertion, samples.SEED)
    verify_observation(signed, samples.PUBLIC)
    back = CODEC.decode(type(signed), CODEC.dumps(signed))
    verify_observation(back, samples.PUBLIC)
    sig = bytearray(bytes.fromhex(signed.executor_provenance.signature))
    bit = data.draw(st.integers(0, len(sig) * 8 - 1))
    sig[bit // 8] ^= 1 << (bit % 8)
    flipped = attrs.evolve(
        signed, executor_provenance=attrs.evolve(signed.executor_provenance, signature=sig.hex())
    )
    _expect_invalid_signature(flipped)
