"""Refusing before the claim: a collector that cannot isolate as the profile requires claims nothing."""

from __future__ import annotations

import attrs
import pytest
from taskcore.collector import sandbox
from taskcore.collector.client import qualification
from taskcore.collector.preflight import check_before_claim
from taskcore.contract.collector import DEFAULT_ISOLATION, NetworkAccess
from taskcore.contract.collector_records import SandboxMode
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.profiles import install_collector_profile

from .conftest import Live, recipe

# Met by every machine (any sandbox, the network allowed), limited only by the output cap.
LENIENT = attrs.evolve(DEFAULT_ISOLATION, network=NetworkAccess.HOST, output_cap_bytes=1 << 20)


@pytest.fixture
def lenient(authority, state, tmp_path):
    world = Live(authority, state, tmp_path, isolation=LENIENT)
    yield world
    world.close()


def refused_before_claim(world: Live) -> TaskError:
    world.checkpoint()
    world.client.calls.clear()
    with pytest.raises(TaskError) as err:
        world.collect()
    assert world.client.calls == ["qualification"]
    answer = qualification(world.client, repository="acme", profile="default", change="c1")
    assert answer["next"]["operation"] == "collector_claim"
    assert not any(world.state.root.joinpath("attempts").glob("*"))
    return err.value


def test_a_machine_that_meets_the_profile_passes_the_preflight(lenient):
    check_before_claim(
        lenient.data_dir,
        repository="acme",
        profile="default",
        step_id="tests",
        state=lenient.state,
    )
    lenient.checkpoint()
    assert lenient.collect()["record_outcome"] == "passed"


def test_a_limit_this_machine_cannot_enforce_is_refused_before_the_claim(
    authority, state, tmp_path, monkeypatch
):
    strict = attrs.evolve(LENIENT, process_limit=128)
    world = Live(authority, state, tmp_path, isolation=strict)
    try:
        # The machine loses what it had when the profile was pinned (root, no cgroups).
        monkeypatch.setattr(sandbox, "cgroup_v1_available", lambda: False)
        monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
        err = refused_before_claim(world)
        assert err.code is ErrorCode.ISOLATION_UNAVAILABLE
        assert "process limit" in err.message
    finally:
        world.close()


def test_a_minimum_sandbox_this_machine_lacks_is_refused_before_the_claim(
    authority, state, tmp_path, monkeypatch
):
    world = Live(authority, state, tmp_path, isolation=LENIENT)
    try:
        required = attrs.evolve(LENIENT, minimum_sandbox=SandboxMode.BWRAP)
        profile = attrs.evolve(
            authority.profile(recipe("echo ok"), sandbox=SandboxMode.NONE, isolation=LENIENT),
            profile_id="cp-2",
            isolation=required,
        )
        install_collector_profile(authority.storage, authority.clock, profile=profile)
        monkeypatch.setattr(sandbox, "bwrap_available", lambda: False)
        err = refused_before_claim(world)
        assert err.code is ErrorCode.ISOLATION_UNAVAILABLE
        assert "bubblewrap" in err.message
    finally:
        world.close()


def test_a_runtime_that_is_not_the_pinned_one_is_refused_before_the_claim(
    authority, state, tmp_path
):
    world = Live(authority, state, tmp_path, isolation=LENIENT)
    try:
        other = authority.profile(
            recipe("echo ok"),
            profile_id="cp-2",
            sandbox=SandboxMode.NONE,
            isolation=attrs.evolve(LENIENT, output_cap_bytes=1 << 21),
        )
        install_collector_profile(authority.storage, authority.clock, profile=other)
        if sandbox.detect_sandbox() is SandboxMode.NONE:
            pytest.skip("this machine runs unsandboxed, which is what the profile pins")
        err = refused_before_claim(world)
        assert err.code is ErrorCode.RUNTIME_MISMATCH
        assert "nothing was claimed" in err.message
    finally:
        world.close()


def test_a_read_only_path_exposing_the_data_dir_is_refused_before_the_claim(
    authority, state, tmp_path
):
    world = Live(authority, state, tmp_path, isolation=LENIENT)
    try:
        exposing = attrs.evolve(LENIENT, read_only_paths=(str(tmp_path),))
        profile = attrs.evolve(
            authority.profile(recipe("echo ok"), sandbox=None, isolation=LENIENT),
            profile_id="cp-2",
            isolation=exposing,
        )
        install_collector_profile(authority.storage, authority.clock, profile=profile)
        err = refused_before_claim(world)
        assert err.code is ErrorCode.INVALID_VALUE
        assert "would expose" in err.message
    finally:
        world.close()
