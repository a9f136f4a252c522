from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.canonical import canonical_json
from taskcore.contract.collector_transfer import (
    MAGIC,
    OriginGrant,
    RecordType,
    TransferHeader,
    TransferKind,
    decode_record,
    decode_transfer,
    encode_transfer,
    record_entries,
)
from taskcore.contract.common import ExecutorBinding
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES
from taskcore.signing import public_key_hex
from taskcore.testing import OTHER_SEED, SEED

PUBLIC = public_key_hex(SEED)


def header_for(records: tuple[bytes, bytes], *, kind=TransferKind.COMMAND, entries=None, **changes):
    types = (
        (RecordType.EXECUTION_REQUEST, RecordType.EXECUTION_RECORD)
        if kind is TransferKind.COMMAND
        else (RecordType.REVIEW_REQUEST, RecordType.REVIEW_RECORD)
    )
    entries = entries or record_entries(tuple(zip(types, records, strict=True)))
    fields = dict(
        version=1,
        kind=kind,
        audience="authority-1",
        repository_id="acme/widgets",
        workflow_profile_id="default",
        collector_profile_id="cp-1",
        step_id="tests",
        task_id="task-1",
        task_digest="a" * 64,
        attempt_id="att-1",
        attempt_digest="b" * 64,
        execution_operation_id="op-1",
        fence=3,
        origin=OriginGrant(owner_id="w1", agent_id="tok1", grant_generation=2),
        registration=ExecutorBinding(
            registration_id="reg-1",
            executor_id="ex-1",
            registration_epoch=1,
            verification_key_id="k-1",
        ),
        public_key=PUBLIC,
        request_sha256=entries[0].sha256,
        collector_identity_sha256="c" * 64,
        upload_request_id="upload-1",
        records=entries,
        created_at_ms=1,
    )
    fields.update(changes)
    return TransferHeader(**fields)


RECORDS = (b'{"request":1}', b'{"record":2}')


def envelope(records=RECORDS, seed=SEED, **changes) -> bytes:
    return encode_transfer(header_for(records, **changes), records, seed)


def test_round_trip_returns_the_exact_header_and_records():
    blob = envelope()
    decoded = decode_transfer(blob)
    decoded.verify(PUBLIC)
    assert decoded.records == RECORDS
    assert decoded.header == header_for(RECORDS)
    assert decoded.header_bytes == canonical_json(decoded.header)
    assert blob.startswith(MAGIC)


def test_encoding_is_deterministic():
    assert envelope() == envelope()


def test_a_signature_by_another_key_does_not_verify():
    with pytest.raises(TaskError) as err:
        decode_transfer(envelope(seed=OTHER_SEED)).verify(PUBLIC)
    assert err.value.code is ErrorCode.INVALID_SIGNATURE


def test_a_flipped_record_byte_is_an_invalid_signature():
    blob = bytearray(envelope())
    blob[-3] ^= 0x01
    with pytest.raises(TaskError) as err:
        decode_transfer(bytes(blob))
    assert err.value.code is ErrorCode.INVALID_SIGNATURE


def test_a_flipped_signature_byte_does_not_verify():
    blob = bytearray(envelope())
    hlen = int.from_bytes(blob[8:12], "big")
    blob[12 + hlen + 5] ^= 0x80
    with pytest.raises(TaskError) as err:
        decode_transfer(bytes(blob)).verify(PUBLIC)
    assert err.value.code is ErrorCode.INVALID_SIGNATURE


@given(st.data())
def test_no_single_flipped_byte_yields_a_verified_transfer(data):
    blob = bytearray(envelope())
    index = data.draw(st.integers(0, len(blob) - 1))
    bit = data.draw(st.integers(0, 7))
    blob[index] ^= 1 << bit
    with pytest.raises(TaskError) as err:
        decode_transfer(bytes(blob)).verify(PUBLIC)
    assert err.value.code in (
        ErrorCode.INVALID_SIGNATURE,
        ErrorCode.TRANSFER_MALFORMED,
        ErrorCode.PAYLOAD_TOO_LARGE,
    )


def test_trailing_bytes_are_malformed():
    with pytest.raises(TaskError) as err:
        decode_transfer(envelope() + b"x")
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_a_truncated_transfer_is_malformed():
    with pytest.raises(TaskError) as err:
        decode_transfer(envelope()[:-1])
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_bad_magic_is_malformed():
    with pytest.raises(TaskError) as err:
        decode_transfer(b"XXXX" + envelope()[4:])
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_an_oversized_transfer_is_refused_before_parsing():
    with pytest.raises(TaskError) as err:
        decode_transfer(b"\x00" * (COLLECTOR_ENVELOPE_MAX_BYTES + 1))
    assert err.value.code is ErrorCode.PAYLOAD_TOO_LARGE


def test_a_non_canonical_header_is_malformed():
    blob = envelope()
    hlen = int.from_bytes(blob[8:12], "big")
    header = blob[12 : 12 + hlen]
    spaced = header.replace(b'"version":1', b'"version": 1', 1)
    rebuilt = MAGIC + len(spaced).to_bytes(4, "big") + spaced + blob[12 + hlen :]
    with pytest.raises(TaskError) as err:
        decode_transfer(rebuilt)
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_a_header_with_the_wrong_record_types_is_malformed():
    review = header_for(RECORDS, kind=TransferKind.FINITE_REVIEW)
    with pytest.raises(TaskError) as err:
        header_for(RECORDS, kind=TransferKind.COMMAND, entries=review.records)
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_request_digest_must_be_the_first_record():
    with pytest.raises(TaskError) as err:
        header_for(RECORDS, request_sha256="d" * 64)
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_records_that_do_not_match_the_header_are_not_encoded():
    with pytest.raises(TaskError) as err:
        encode_transfer(header_for(RECORDS), (RECORDS[0], b"other"), SEED)
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_review_transfers_carry_review_records():
    blob = envelope(kind=TransferKind.FINITE_REVIEW)
    assert decode_transfer(blob).header.kind is TransferKind.FINITE_REVIEW


def test_decode_record_refuses_non_canonical_bytes():
    origin = OriginGrant(owner_id="w", agent_id="a", grant_generation=1)
    assert decode_record(OriginGrant, canonical_json(origin)) == origin
    with pytest.raises(TaskError) as err:
        decode_record(OriginGrant, b'{"agent_id":"a","owner_id":"w","grant_generation":1}')
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED


def test_decode_record_refuses_unknown_fields_with_a_path():
    with pytest.raises(TaskError) as err:
        decode_record(OriginGrant, b'{"owner_id":"w","agent_id":"a","grant_generation":1,"x":1}')
    assert err.value.code is ErrorCode.TRANSFER_MALFORMED
    assert err.value.path == "$.x"
