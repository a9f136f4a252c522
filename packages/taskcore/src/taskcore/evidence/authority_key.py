"""The authority's own Ed25519 key: it signs every collector descriptor it derives.

A collector on another machine (remote mode, ``agent-task collect --clone``) has no copy of the
authority's data dir to recompile a descriptor against. Instead it pins this key when it is
enrolled (``agent-task collector pin-authority``, with the values ``agent-task operator enroll``
prints) and accepts only descriptors the authority signed with it, for the pinned audience.

* The key lives in ``DATA_DIR/authority-key.json`` (mode 0600 in the 0700 data dir, owned by
  the service's user, never through a symlink): ``{"version", "seed", "public_key",
  "key_id"}``. It is generated once, when the service or an operator first opens the data dir
  (:func:`ensure_authority_key`), and never replaced; nothing but the authority reads it.
* The signed bytes are the descriptor's canonical JSON with ``authority_signature`` set to
  ``null`` (the pattern of the seed's observation signing bytes), hashed under the domain
  :data:`~taskcore.contract.collector_descriptor.DESCRIPTOR_DOMAIN`; Ed25519 signs the 32 digest bytes.
* :func:`~taskcore.contract.collector_descriptor.verify_descriptor` (the wire rule both
  sides share) fails closed: it returns nothing or raises ``INVALID_SIGNATURE``.

>>> import tempfile, pathlib
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> key = ensure_authority_key(data)
>>> load_authority_key(data).public_key == key.public_key
True
>>> oct((data / AUTHORITY_KEY_FILE).stat().st_mode & 0o777)
'0o600'
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Final

import attrs

from taskcore.contract.collector_descriptor import CollectorDescriptor, descriptor_digest
from taskcore.digest import is_hex64
from taskcore.durable import durable_write
from taskcore.errors import ErrorCode, TaskError
from taskcore.signing import generate_seed, key_id_for, public_key_hex, sign_digest

__all__ = [
    "AUTHORITY_KEY_FILE",
    "AuthorityKey",
    "ensure_authority_key",
    "load_authority_key",
    "sign_descriptor",
]

AUTHORITY_KEY_FILE: Final = "authority-key.json"
"""The authority's private key file in the data dir."""


@attrs.frozen(kw_only=True)
class AuthorityKey:
    """The authority's signing key (the seed never leaves the data dir)."""

    seed: str = attrs.field(repr=False)
    public_key: str
    key_id: str


def _unsafe(message: str) -> TaskError:
    return TaskError(ErrorCode.INTEGRITY_FAILURE, message)


def load_authority_key(data_dir: Path | str) -> AuthorityKey:
    """Read the authority key of ``data_dir``; ``NOT_FOUND`` if there is none yet.

    The file must be a regular file owned by this user with no group or other permission,
    opened without following a symlink; its public key and key ID must match its seed.
    """
    path = Path(data_dir) / AUTHORITY_KEY_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise TaskError(
            ErrorCode.NOT_FOUND, f"the data dir {str(data_dir)[:300]} has no authority key yet"
        ) from None
    except OSError:
        raise _unsafe("the authority key file cannot be opened (a symlink?)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise _unsafe("the authority key file must be a private file of the service's user")
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        tree = json.loads(raw)
    except ValueError:
        tree = None
    if not isinstance(tree, dict) or tree.get("version") != 1 or not is_hex64(tree.get("seed")):
        raise _unsafe("the authority key file is damaged")
    seed = str(tree["seed"])
    public = public_key_hex(seed)
    if tree.get("public_key") != public or tree.get("key_id") != key_id_for(public):
        raise _unsafe("the authority key file is inconsistent")
    return AuthorityKey(seed=seed, public_key=public, key_id=key_id_for(public))


def ensure_authority_key(data_dir: Path | str) -> AuthorityKey:
    """Return the authority key of ``data_dir``, generating it once if there is none.

    Two processes racing to generate agree: the file is created exclusively and the loser
    reads the winner's key. An existing key is never replaced.
    """
    directory = Path(data_dir)
    try:
        return load_authority_key(directory)
    except TaskError as err:
        if err.code is not ErrorCode.NOT_FOUND:
            raise
    if directory.is_symlink():
        raise TaskError(ErrorCode.INVALID_PATH, "the data directory must not be a symlink")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    seed = generate_seed()
    public = public_key_hex(seed)
    body = {"version": 1, "seed": seed, "public_key": public, "key_id": key_id_for(public)}
    try:
        durable_write(directory / AUTHORITY_KEY_FILE, json.dumps(body).encode("ascii"))
    except TaskError as lost:
        if lost.code is not ErrorCode.ALREADY_EXISTS:
            raise
    return load_authority_key(directory)


def sign_descriptor(descriptor: CollectorDescriptor, key: AuthorityKey) -> CollectorDescriptor:
    """Return ``descriptor`` naming ``key`` and carrying its signature."""
    named = attrs.evolve(descriptor, authority_public_key=key.public_key, authority_signature=None)
    return attrs.evolve(named, authority_signature=sign_digest(key.seed, descriptor_digest(named)))
