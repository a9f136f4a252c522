from __future__ import annotations

import attrs
import pytest
from taskcore.contract.collector_descriptor import build_execution_request, collector_profile_digest
from taskcore.errors import ErrorCode, TaskError


def test_a_descriptor_built_by_the_authority_checks(make_descriptor):
    make_descriptor().check()


def test_the_pinned_request_is_deterministic(make_descriptor):
    d = make_descriptor()
    assert build_execution_request(d.binding, d.profile) == d.request


def test_a_changed_request_field_is_refused(make_descriptor):
    d = make_descriptor()
    bad = attrs.evolve(d, request=attrs.evolve(d.request, fence=9))
    with pytest.raises(TaskError) as err:
        bad.check()
    assert err.value.code is ErrorCode.BINDING_MISMATCH


def test_a_profile_for_another_step_is_refused(make_descriptor):
    d = make_descriptor()
    other = attrs.evolve(d.profile, step_id="lint")
    bad = attrs.evolve(d, profile=other, profile_digest=collector_profile_digest(other))
    with pytest.raises(TaskError) as err:
        bad.check()
    assert err.value.code is ErrorCode.BINDING_MISMATCH


def test_a_profile_for_another_epoch_is_refused(make_descriptor):
    d = make_descriptor()
    other = attrs.evolve(d.profile, registration_epoch=2)
    bad = attrs.evolve(d, profile=other, profile_digest=collector_profile_digest(other))
    with pytest.raises(TaskError) as err:
        bad.check()
    assert err.value.code is ErrorCode.BINDING_MISMATCH


def test_a_wrong_profile_digest_is_refused(make_descriptor):
    bad = attrs.evolve(make_descriptor(), profile_digest="0" * 64)
    with pytest.raises(TaskError) as err:
        bad.check()
    assert err.value.code is ErrorCode.BINDING_MISMATCH


def test_a_wrong_request_digest_is_refused(make_descriptor):
    bad = attrs.evolve(make_descriptor(), request_sha256="0" * 64)
    with pytest.raises(TaskError) as err:
        bad.check()
    assert err.value.code is ErrorCode.BINDING_MISMATCH
