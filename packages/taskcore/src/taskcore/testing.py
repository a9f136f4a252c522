"""Test support: a temporary journal, a fake clock, a fixed-seed signer and an operation factory.

The suites of taskcore and of every adapter use these instead of private copies, and so can
anyone who tests code against taskcore. Nothing in taskcore or an adapter imports this module
(an import-linter contract in ``pyproject.toml`` says so); it is not part of the service.

>>> clock = FakeClock(0)
>>> clock.advance(5)
>>> clock.now_ms()
5
>>> signer().public_key == PUBLIC
True
>>> op("demo.echo", lambda ctx, req: {}).summary
'demo.echo for tests.'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from taskcore.actors import RiskClass, Tier
from taskcore.clock import FakeClock
from taskcore.service import CallContext, Operation, Surface
from taskcore.signing import public_key_hex, sign_bytes, sign_digest
from taskcore.store.storage import Storage, open_storage

__all__ = [
    "OTHER_PUBLIC",
    "OTHER_SEED",
    "PUBLIC",
    "SEED",
    "FakeClock",
    "FixedSigner",
    "NoInput",
    "op",
    "signer",
    "temp_journal",
]

SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
"""RFC 8032 section 7.1 test 1: a published Ed25519 test seed, never a real key."""
PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
"""The public key of :data:`SEED` (RFC 8032 test 1)."""
OTHER_SEED = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"
"""RFC 8032 section 7.1 test 2."""
OTHER_PUBLIC = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
"""The public key of :data:`OTHER_SEED` (RFC 8032 test 2)."""


@attrs.frozen
class FixedSigner:
    """An Ed25519 signer over a fixed, published seed (signatures are deterministic)."""

    seed: str = SEED

    @property
    def public_key(self) -> str:
        """The lowercase hex public key."""
        return public_key_hex(self.seed)

    def sign_bytes(self, message: bytes) -> str:
        """The hex signature of ``message``."""
        return sign_bytes(self.seed, message)

    def sign_digest(self, digest_hex: str) -> str:
        """The hex signature of a SHA-256 digest given in hex."""
        return sign_digest(self.seed, digest_hex)


def signer(seed: str = SEED) -> FixedSigner:
    """A :class:`FixedSigner` over ``seed`` (RFC 8032 test key 1 by default)."""
    return FixedSigner(seed)


@contextmanager
def temp_journal(directory: Path | str) -> Iterator[Storage]:
    """A fresh journal in ``directory`` (created, migrated), closed when the block ends.

    The journal is the one :func:`~taskcore.store.storage.open_storage` opens: the PostgreSQL
    database ``$AGENT_TASK_DATABASE`` names if it is set, else ``directory/journal.sqlite``.
    """
    storage = open_storage(Path(directory), create=True)
    try:
        yield storage
    finally:
        storage.close()


@attrs.frozen(kw_only=True)
class NoInput:
    """An input type with no fields, for operations that take nothing."""


def op(
    name: str,
    handler: Callable[[CallContext, Any], Any],
    *,
    input_type: type[Any] = NoInput,
    **changes: Any,
) -> Operation[Any, Any]:
    """An :class:`~taskcore.service.Operation` with test defaults, ``changes`` applied.

    Defaults: agent tier, a read, idempotent, not offered over MCP, on the queue surface, no
    declared output type, summary ``"<name> for tests."``.
    """
    fields: dict[str, Any] = {
        "name": name,
        "summary": f"{name} for tests.",
        "input_type": input_type,
        "output_type": None,
        "min_tier": Tier.AGENT,
        "risk": RiskClass.READ,
        "idempotent": True,
        "mcp": False,
        "surface": Surface.QUEUE,
        "handler": handler,
    }
    fields.update(changes)
    return Operation(**fields)
