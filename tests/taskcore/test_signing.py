import pytest
from taskcore.errors import ErrorCode, TaskError
from taskcore.signing import (
    generate_seed,
    public_key_hex,
    sign_bytes,
    sign_digest,
    verify_bytes,
    verify_digest,
)

# RFC 8032 section 7.1, tests 1-3.
RFC8032 = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
]


@pytest.mark.parametrize(("seed", "public", "message", "signature"), RFC8032)
def test_rfc8032_vectors(seed, public, message, signature):
    assert public_key_hex(seed) == public
    assert sign_bytes(seed, bytes.fromhex(message)) == signature
    verify_bytes(public, bytes.fromhex(message), signature)


def test_digest_signature_covers_raw_digest_bytes():
    seed, public, _, _ = RFC8032[0]
    digest = "ab" * 32
    sig = sign_digest(seed, digest)
    assert sig == sign_bytes(seed, bytes.fromhex(digest))
    verify_digest(public, digest, sig)


def _expect_invalid(fn, *args):
    with pytest.raises(TaskError) as info:
        fn(*args)
    assert info.value.code is ErrorCode.INVALID_SIGNATURE


def test_flipped_signature_bit_fails_closed():
    seed, public, _, _ = RFC8032[1]
    digest = "cd" * 32
    sig = bytearray(bytes.fromhex(sign_digest(seed, digest)))
    sig[5] ^= 1
    _expect_invalid(verify_digest, public, digest, sig.hex())


def test_other_key_fails():
    seed, _, _, _ = RFC8032[0]
    _, other_public, _, _ = RFC8032[1]
    digest = "00" * 32
    _expect_invalid(verify_digest, other_public, digest, sign_digest(seed, digest))


@pytest.mark.parametrize(
    "signature",
    ["", "00" * 63, "00" * 65, "AB" * 64, "zz" * 64],
)
def test_malformed_signatures_fail(signature):
    _, public, _, _ = RFC8032[0]
    _expect_invalid(verify_digest, public, "00" * 32, signature)


def test_uppercase_key_is_refused():
    _, public, _, sig = RFC8032[0]
    _expect_invalid(verify_bytes, public.upper(), b"", sig)


def test_small_order_public_key_is_refused():
    # The identity point: libsodium refuses small-order keys, so no signature verifies.
    identity = "01" + "00" * 31
    _expect_invalid(verify_bytes, identity, b"", "00" * 64)


def test_non_canonical_s_is_refused():
    _, public, _, sig = RFC8032[0]
    # Add the group order L to S: same point maths, non-canonical encoding, must be refused.
    raw = bytes.fromhex(sig)
    r, s = raw[:32], int.from_bytes(raw[32:], "little")
    order = 2**252 + 27742317777372353535851937790883648493
    bumped = r + (s + order).to_bytes(32, "little")
    _expect_invalid(verify_bytes, public, b"", bumped.hex())


def test_generated_seeds_are_fresh_and_usable():
    a, b = generate_seed(), generate_seed()
    assert a != b
    verify_bytes(public_key_hex(a), b"m", sign_bytes(a, b"m"))
