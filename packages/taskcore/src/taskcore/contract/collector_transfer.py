"""The signed collector transfer: a header, an Ed25519 signature and two typed records.

Envelope layout (all integers big-endian; every byte is accounted for, nothing may trail)::

    magic     8 bytes   b"ATCT" 0x00 0x01 0x00 0x00   (format 1)
    hlen      4 bytes   length of the header
    header    hlen      canonical JSON of TransferHeader
    signature 64 bytes  Ed25519 over SHA-256(COLLECTOR_TRANSFER_DOMAIN || 0 || u64(hlen) || header)
    records   ...       each record's canonical JSON, in header order, with the header's lengths

The header commits to the authority audience, repository, workflow and collector profiles,
step, exact task and attempt digests, execution operation, fence, originating actor and
grant generation, registration epoch and key, the immutable request, the observed collector
identity, a fresh upload request ID, and the ordered typed-record lengths and digests. So a
signature over the header covers every record byte. A transfer carries exactly one request
record and one record of the same kind (``execution_request`` + ``execution_record``, or
``review_request`` + ``review_record``) and nothing else: no URL, run projection, database or
receipt field.

Decoding is fail-closed: framing errors are ``TRANSFER_MALFORMED``; a record whose digest is
not the header's, or a signature that does not verify, is ``INVALID_SIGNATURE``.

>>> from taskcore.contract.common import AgentIdentity, ExecutorBinding
>>> seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
>>> entries = record_entries(((RecordType.EXECUTION_REQUEST, b"{}"),
...                           (RecordType.EXECUTION_RECORD, b"[]")))
>>> header = TransferHeader(version=1, kind=TransferKind.COMMAND, audience="auth1",
...     repository_id="acme", workflow_profile_id="p", collector_profile_id="cp", step_id="test",
...     task_id="t", task_digest="a" * 64, attempt_id="a", attempt_digest="b" * 64,
...     execution_operation_id="op", fence=1,
...     origin=OriginGrant(owner_id="w", agent_id="tok", grant_generation=1),
...     registration=ExecutorBinding(registration_id="r", executor_id="e",
...                                  registration_epoch=1, verification_key_id="k"),
...     public_key="d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
...     request_sha256=entries[0].sha256, collector_identity_sha256="c" * 64,
...     upload_request_id="up1", records=entries, created_at_ms=0)
>>> blob = encode_transfer(header, (b"{}", b"[]"), seed)
>>> decoded = decode_transfer(blob)
>>> decoded.verify(header.public_key)
>>> decoded.records
(b'{}', b'[]')
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final, TypeVar

import attrs

from taskcore.canonical import canonical_json
from taskcore.codec import Codec, default_codec, parse_json, wire_field
from taskcore.contract.common import ExecutorBinding, digest_field, id_field
from taskcore.digest import (
    COLLECTOR_TRANSFER_DOMAIN,
    domain_digest,
    domain_digest_bytes,
    sha256_hex,
)
from taskcore.errors import ErrorCode, TaskError
from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    COLLECTOR_HEADER_MAX_BYTES,
    COLLECTOR_RECORD_MAX_BYTES,
)
from taskcore.signing import sign_bytes, verify_bytes

__all__ = [
    "MAGIC",
    "DecodedTransfer",
    "OriginGrant",
    "RecordEntry",
    "RecordType",
    "TransferHeader",
    "TransferKind",
    "decode_record",
    "decode_transfer",
    "encode_transfer",
    "header_digest",
    "record_entries",
    "transfer_digest",
]

MAGIC: Final = b"ATCT\x00\x01\x00\x00"
"""The first eight bytes of every format-1 transfer."""

T = TypeVar("T")

_SIGNATURE_BYTES: Final = 64
_FIXED_BYTES: Final = len(MAGIC) + 4 + _SIGNATURE_BYTES


class TransferKind(enum.Enum):
    """Which collector produced the transfer."""

    COMMAND = "command"
    FINITE_REVIEW = "finite_review"


class RecordType(enum.Enum):
    """The typed records a transfer may carry (and nothing else)."""

    EXECUTION_REQUEST = "execution_request"
    EXECUTION_RECORD = "execution_record"
    REVIEW_REQUEST = "review_request"
    REVIEW_RECORD = "review_record"


_RECORD_TYPES: Final = {
    TransferKind.COMMAND: (RecordType.EXECUTION_REQUEST, RecordType.EXECUTION_RECORD),
    TransferKind.FINITE_REVIEW: (RecordType.REVIEW_REQUEST, RecordType.REVIEW_RECORD),
}


@attrs.frozen(kw_only=True)
class RecordEntry:
    """One typed record's commitment in the header: its type, exact length and SHA-256."""

    type: RecordType = wire_field()
    length: int = wire_field(lo=1, hi=COLLECTOR_RECORD_MAX_BYTES)
    sha256: str = digest_field()


@attrs.frozen(kw_only=True)
class OriginGrant:
    """The originating actor (the credential that claimed the task) and its grant generation.

    ``grant_generation`` is the authority's generation of that actor's grant when the task was
    claimed; admission requires the grant to be live at the same generation.
    """

    owner_id: str = id_field()
    agent_id: str = id_field()
    grant_generation: int = wire_field()


@attrs.frozen(kw_only=True)
class TransferHeader:
    """Everything the collector's signature commits to."""

    version: int = wire_field(version=True)
    kind: TransferKind = wire_field()
    audience: str = id_field()
    repository_id: str = wire_field(min_len=1, max_len=257)
    workflow_profile_id: str = id_field()
    collector_profile_id: str = id_field()
    step_id: str = id_field()
    task_id: str = id_field()
    task_digest: str = digest_field()
    attempt_id: str = id_field()
    attempt_digest: str = digest_field()
    execution_operation_id: str = id_field()
    fence: int = wire_field(lo=1)
    origin: OriginGrant = wire_field()
    registration: ExecutorBinding = wire_field()
    public_key: str = digest_field()
    request_sha256: str = digest_field()
    collector_identity_sha256: str = digest_field()
    upload_request_id: str = id_field()
    records: tuple[RecordEntry, ...] = wire_field(min_len=2, max_len=2)
    created_at_ms: int = wire_field()

    def __attrs_post_init__(self) -> None:
        types = tuple(entry.type for entry in self.records)
        if types != _RECORD_TYPES[self.kind]:
            want = " + ".join(t.value for t in _RECORD_TYPES[self.kind])
            raise TaskError(
                ErrorCode.TRANSFER_MALFORMED,
                f"a {self.kind.value} transfer carries exactly {want}, in that order",
                path="$.records",
            )
        if self.records[0].sha256 != self.request_sha256:
            raise TaskError(
                ErrorCode.TRANSFER_MALFORMED,
                "request_sha256 must be the digest of the first (request) record",
                path="$.request_sha256",
            )
        if sum(e.length for e in self.records) > COLLECTOR_ENVELOPE_MAX_BYTES - _FIXED_BYTES:
            raise TaskError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"the records exceed the {COLLECTOR_ENVELOPE_MAX_BYTES}-byte envelope",
                path="$.records",
            )


def record_entries(records: Sequence[tuple[RecordType, bytes]]) -> tuple[RecordEntry, ...]:
    """Return the header commitments of ``records`` (type, length, SHA-256), in order."""
    return tuple(
        RecordEntry(type=kind, length=len(data), sha256=sha256_hex(data)) for kind, data in records
    )


def header_digest(header_bytes: bytes) -> bytes:
    """Return the 32 raw bytes the collector signs: the transfer domain over the header."""
    return domain_digest_bytes(COLLECTOR_TRANSFER_DOMAIN, header_bytes)


def transfer_digest(envelope: bytes) -> str:
    """Return the identity of a whole transfer: plain SHA-256 of its exact envelope bytes."""
    return sha256_hex(envelope)


def encode_transfer(header: TransferHeader, records: Sequence[bytes], seed_hex: str) -> bytes:
    """Sign ``header`` with ``seed_hex`` and return the envelope bytes.

    ``records`` must be exactly the bytes the header commits to, in order.
    """
    if len(records) != len(header.records):
        raise TaskError(ErrorCode.TRANSFER_MALFORMED, "one record per header entry is required")
    for entry, data in zip(header.records, records, strict=True):
        if entry.length != len(data) or entry.sha256 != sha256_hex(data):
            raise TaskError(
                ErrorCode.TRANSFER_MALFORMED, "a record does not match its header commitment"
            )
    header_bytes = canonical_json(header)
    if len(header_bytes) > COLLECTOR_HEADER_MAX_BYTES:
        raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, "the transfer header is too large")
    signature = bytes.fromhex(sign_bytes(seed_hex, header_digest(header_bytes)))
    envelope = b"".join(
        (MAGIC, len(header_bytes).to_bytes(4, "big"), header_bytes, signature, *records)
    )
    if len(envelope) > COLLECTOR_ENVELOPE_MAX_BYTES:
        raise TaskError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"the transfer is {len(envelope)} bytes; the limit is {COLLECTOR_ENVELOPE_MAX_BYTES}",
        )
    return envelope


@attrs.frozen(kw_only=True)
class DecodedTransfer:
    """A structurally valid transfer; call :meth:`verify` before trusting anything in it."""

    header: TransferHeader
    header_bytes: bytes
    signature: bytes
    records: tuple[bytes, ...]
    digest: str

    def verify(self, public_key: str) -> None:
        """Verify the signature with ``public_key`` (from the enrollment, never the header).

        Returns nothing or raises ``INVALID_SIGNATURE``.
        """
        verify_bytes(public_key, header_digest(self.header_bytes), self.signature.hex())

    @property
    def header_digest_hex(self) -> str:
        """The signed digest as 64 hex characters."""
        return domain_digest(COLLECTOR_TRANSFER_DOMAIN, self.header_bytes)


def _malformed(message: str) -> TaskError:
    return TaskError(ErrorCode.TRANSFER_MALFORMED, message)


def decode_transfer(envelope: bytes, codec: Codec | None = None) -> DecodedTransfer:
    """Parse the envelope; check framing, canonical header bytes and every record digest.

    The signature is *not* verified here (the key comes from the enrollment the header names);
    call :meth:`DecodedTransfer.verify`.
    """
    if len(envelope) > COLLECTOR_ENVELOPE_MAX_BYTES:
        raise TaskError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"the transfer is {len(envelope)} bytes; the limit is {COLLECTOR_ENVELOPE_MAX_BYTES}",
        )
    if len(envelope) < _FIXED_BYTES or envelope[: len(MAGIC)] != MAGIC:
        raise _malformed("this is not a format-1 collector transfer (bad magic)")
    hlen = int.from_bytes(envelope[len(MAGIC) : len(MAGIC) + 4], "big")
    if hlen == 0 or hlen > COLLECTOR_HEADER_MAX_BYTES:
        raise _malformed(f"header length {hlen} is outside 1..{COLLECTOR_HEADER_MAX_BYTES}")
    start = len(MAGIC) + 4
    if len(envelope) < start + hlen + _SIGNATURE_BYTES:
        raise _malformed("the transfer ends inside its header or signature")
    header_bytes = bytes(envelope[start : start + hlen])
    try:
        tree = parse_json(header_bytes, max_bytes=COLLECTOR_HEADER_MAX_BYTES)
        header = (codec or default_codec()).structure(tree, TransferHeader)
    except TaskError as err:
        if err.code in (ErrorCode.TRANSFER_MALFORMED, ErrorCode.PAYLOAD_TOO_LARGE):
            raise
        raise _malformed(f"the transfer header is invalid: {err.describe()}") from None
    if canonical_json(header) != header_bytes:
        raise _malformed("the transfer header is not in canonical form")
    signature = bytes(envelope[start + hlen : start + hlen + _SIGNATURE_BYTES])
    offset = start + hlen + _SIGNATURE_BYTES
    expected_total = offset + sum(entry.length for entry in header.records)
    if expected_total != len(envelope):
        raise _malformed(
            f"the header commits to {expected_total} bytes; the transfer has {len(envelope)}"
        )
    records: list[bytes] = []
    for index, entry in enumerate(header.records):
        data = bytes(envelope[offset : offset + entry.length])
        offset += entry.length
        if sha256_hex(data) != entry.sha256:
            raise TaskError(
                ErrorCode.INVALID_SIGNATURE,
                f"record {index} ({entry.type.value}) does not match the signed header digest",
                path=f"$.records[{index}]",
            )
        records.append(data)
    return DecodedTransfer(
        header=header,
        header_bytes=header_bytes,
        signature=signature,
        records=tuple(records),
        digest=transfer_digest(envelope),
    )


def decode_record(cls: type[T], data: bytes, codec: Codec | None = None) -> T:
    """Decode one typed record strictly; its bytes must be exactly its canonical form.

    Any failure is ``TRANSFER_MALFORMED`` with the record's JSON path.
    """
    try:
        tree = parse_json(data, max_bytes=COLLECTOR_RECORD_MAX_BYTES)
        value = (codec or default_codec()).structure(tree, cls)
    except TaskError as err:
        raise TaskError(
            ErrorCode.TRANSFER_MALFORMED,
            f"the {cls.__name__} record is invalid: {err.message}",
            path=err.path,
        ) from None
    if canonical_json(value) != data:
        raise TaskError(
            ErrorCode.TRANSFER_MALFORMED, f"the {cls.__name__} record is not in canonical form"
        )
    return value
