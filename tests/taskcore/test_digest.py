import hashlib

import pytest
from taskcore.digest import (
    OBSERVATION_DOMAIN,
    domain_digest,
    is_hex64,
    request_domain,
    require_hex64,
    sha256_hex,
)
from taskcore.errors import TaskError


def test_observation_domain_is_the_seed_spelling():
    assert OBSERVATION_DOMAIN == "agentscm.agent-workflow-observation.v1"


def test_digest_layout_is_domain_nul_u64be_length_bytes():
    data = b'{"a":1}'
    expected = hashlib.sha256(
        OBSERVATION_DOMAIN.encode() + b"\x00" + len(data).to_bytes(8, "big") + data
    ).hexdigest()
    assert domain_digest(OBSERVATION_DOMAIN, data) == expected


def test_different_domains_give_different_digests():
    assert domain_digest("a", b"x") != domain_digest("b", b"x")


def test_request_domains_are_separated_by_action():
    assert request_domain("heartbeat") != request_domain("cancel")
    assert domain_digest(request_domain("heartbeat"), b"{}") != domain_digest(
        request_domain("cancel"), b"{}"
    )


def test_non_ascii_domain_is_refused():
    with pytest.raises(TaskError):
        domain_digest("dömain", b"")


def test_hex64_helpers():
    good = sha256_hex(b"")
    assert is_hex64(good)
    assert not is_hex64(good.upper())
    assert not is_hex64(good[:-1])
    with pytest.raises(TaskError):
        require_hex64("xyz", "digest")


def test_the_length_is_eight_bytes_big_endian_even_past_one_byte():
    data = b"x" * 0x1234
    prefix = OBSERVATION_DOMAIN.encode() + b"\x00" + bytes([0, 0, 0, 0, 0, 0, 0x12, 0x34])
    assert domain_digest(OBSERVATION_DOMAIN, data) == hashlib.sha256(prefix + data).hexdigest()


def test_empty_data_still_hashes_domain_nul_and_zero_length():
    expected = hashlib.sha256(OBSERVATION_DOMAIN.encode() + b"\x00" + b"\x00" * 8).hexdigest()
    assert domain_digest(OBSERVATION_DOMAIN, b"") == expected


def test_a_domain_containing_nul_is_refused():
    with pytest.raises(TaskError):
        domain_digest("a\x00b", b"")


def test_the_digest_is_64_lowercase_hex():
    value = domain_digest("d", b"data")
    assert is_hex64(value)
