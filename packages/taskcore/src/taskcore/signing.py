"""Ed25519 over digests (PyNaCl), strict and fail-closed.

The signature covers the 32 raw bytes a 64-hex digest decodes to, never the hex text.
Keys and signatures travel as lowercase hex: a 32-byte seed (64 hex), a 32-byte public key
(64 hex), a 64-byte signature (128 hex). :func:`verify_digest` returns nothing or raises one
``INVALID_SIGNATURE`` error; there is no boolean to forget to check.

>>> seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
>>> public_key_hex(seed)
'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a'
>>> digest = "00" * 32
>>> verify_digest(public_key_hex(seed), digest, sign_digest(seed, digest))
"""

from __future__ import annotations

import functools
import re

import nacl.exceptions
import nacl.signing

from taskcore.digest import require_hex64, sha256_hex
from taskcore.errors import ErrorCode, TaskError

__all__ = [
    "generate_seed",
    "key_id_for",
    "public_key_hex",
    "sign_bytes",
    "sign_digest",
    "verify_bytes",
    "verify_digest",
]

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")


def _key_bytes(value: str, what: str) -> bytes:
    if not isinstance(value, str) or _HEX64.fullmatch(value) is None:
        raise TaskError(ErrorCode.INVALID_SIGNATURE, f"{what} must be 64 lowercase hex characters")
    return bytes.fromhex(value)


def _signing_key(seed_hex: str) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(_key_bytes(seed_hex, "secret key seed"))


def generate_seed() -> str:
    """Return a fresh random 32-byte Ed25519 seed as 64 lowercase hex (collector keygen only)."""
    return bytes(nacl.signing.SigningKey.generate()).hex()


def public_key_hex(seed_hex: str) -> str:
    """Return the public key (64 hex) of the secret key seed ``seed_hex``."""
    return bytes(_signing_key(seed_hex).verify_key).hex()


def sign_bytes(seed_hex: str, message: bytes) -> str:
    """Sign arbitrary ``message`` bytes; return the 128-hex signature."""
    return _signing_key(seed_hex).sign(message).signature.hex()


def sign_digest(seed_hex: str, digest_hex: str) -> str:
    """Sign the 32 raw bytes of ``digest_hex``; return the 128-hex signature."""
    return sign_bytes(seed_hex, _key_bytes(digest_hex, "digest"))


@functools.lru_cache(maxsize=256)
def _verify_key(key: bytes) -> nacl.signing.VerifyKey:
    """The verify key of 32 public-key bytes (kept: an executor signs many observations)."""
    return nacl.signing.VerifyKey(key)


def verify_bytes(public_key: str, message: bytes, signature: str) -> None:
    """Verify ``signature`` over ``message``; return nothing or raise ``INVALID_SIGNATURE``."""
    key = _key_bytes(public_key, "public key")
    if not isinstance(signature, str) or _HEX128.fullmatch(signature) is None:
        raise TaskError(
            ErrorCode.INVALID_SIGNATURE, "signature must be 128 lowercase hex characters"
        )
    try:
        _verify_key(key).verify(message, bytes.fromhex(signature))
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.CryptoError, ValueError):
        raise TaskError(ErrorCode.INVALID_SIGNATURE, "signature does not verify") from None


def verify_digest(public_key: str, digest_hex: str, signature: str) -> None:
    """Verify ``signature`` over the raw bytes of ``digest_hex``; return nothing or raise."""
    verify_bytes(public_key, _key_bytes(digest_hex, "digest"), signature)


def key_id_for(public_key: str) -> str:
    """Return the verification key ID of a public key: ``ed25519-`` and 16 hex of its SHA-256.

    >>> key_id_for("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
    'ed25519-21fe31dfa154a261'
    """
    require_hex64(public_key, "the public key")
    return "ed25519-" + sha256_hex(bytes.fromhex(public_key))[:16]
