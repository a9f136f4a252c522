"""taskcore.testing: the shared test support does what the suites rely on."""

from __future__ import annotations

import pytest
from taskcore.actors import Actor, Tier
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import Registry, Service, Surface
from taskcore.signing import verify_bytes, verify_digest
from taskcore.testing import (
    OTHER_PUBLIC,
    OTHER_SEED,
    PUBLIC,
    SEED,
    FakeClock,
    NoInput,
    op,
    signer,
    temp_journal,
)


def test_the_fixed_seeds_are_the_rfc_8032_test_keys_and_sign_deterministically():
    one, two = signer(), signer(OTHER_SEED)
    assert (one.seed, one.public_key, two.public_key) == (SEED, PUBLIC, OTHER_PUBLIC)
    # RFC 8032 section 7.1, test 1: the signature of the empty message.
    assert one.sign_bytes(b"") == (
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    )
    verify_bytes(PUBLIC, b"x", one.sign_bytes(b"x"))
    verify_digest(PUBLIC, "ab" * 32, one.sign_digest("ab" * 32))


def test_the_fake_clock_only_moves_forward_when_told():
    clock = FakeClock(10)
    clock.advance(5)
    clock.set(20)
    assert clock.now_ms() == 20
    with pytest.raises(ValueError, match="forward"):
        clock.set(19)


def test_a_temp_journal_is_created_migrated_and_closed(tmp_path):
    with temp_journal(tmp_path / "data") as storage, storage.write() as tx:
        assert tx.tokens.get("nobody") is None
    assert (tmp_path / "data").is_dir()
    with temp_journal(tmp_path / "data") as again, again.read() as tx:
        assert tx.tokens.get("nobody") is None


def test_op_builds_a_dispatchable_operation_with_overridable_defaults(tmp_path):
    echo = op("demo.echo", lambda ctx, req: {"workspace": ctx.actor.workspace})
    assert (echo.input_type, echo.surface, echo.mcp, echo.min_tier) == (
        NoInput,
        Surface.QUEUE,
        False,
        Tier.AGENT,
    )
    assert op("demo.x", lambda ctx, req: {}, mcp=True, min_tier=Tier.ADMIN).mcp is True
    registry = Registry()
    registry.register(echo)
    service = Service.open(tmp_path, clock=FakeClock(), registry=registry)
    try:
        agent = Actor(token_id="t", workspace="w1", tier=Tier.AGENT, autonomy=1)
        assert service.dispatch(agent, "demo.echo", b"{}").json() == {"workspace": "w1"}
        with pytest.raises(TaskError) as refused:
            service.dispatch(agent, "demo.echo", b'{"extra": 1}')
        assert refused.value.code is ErrorCode.UNKNOWN_FIELD
    finally:
        service.close()
