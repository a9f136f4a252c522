"""Finite review's wire types: the request derived from binding and profile (contract)."""

from __future__ import annotations

import pytest
from taskcore.canonical import canonical_json
from taskcore.contract.collector_descriptor import collector_profile_digest
from taskcore.contract.collector_review import ReviewRequest, ReviewSource, build_review_request
from taskcore.contract.collector_transfer import decode_record
from taskcore.digest import sha256_hex
from taskcore.errors import ErrorCode, TaskError

from tests.taskcore.collector.test_review import BINDING, SOURCES, profile


def test_the_request_is_derived_from_the_binding_and_the_profile_alone():
    prof = profile()
    request = build_review_request(BINDING, prof, SOURCES)
    assert [s.path for s in request.sources] == list(prof.required_paths)
    for source in request.sources:
        data = SOURCES[source.path]
        assert (source.sha256, source.byte_length) == (sha256_hex(data), len(data))
    assert request.collector_profile_digest == collector_profile_digest(prof)
    assert (request.task_id, request.attempt_id, request.fence, request.commit) == (
        BINDING.task_id,
        BINDING.attempt_id,
        BINDING.fence,
        BINDING.commit,
    )
    assert (request.max_calls, request.timeout_ms) == (prof.max_calls, prof.timeout_ms)
    assert decode_record(ReviewRequest, canonical_json(request)) == request


def test_a_required_path_missing_from_the_revision_is_not_found():
    with pytest.raises(TaskError) as err:
        build_review_request(BINDING, profile(required_paths=("nope.py",)), SOURCES)
    assert err.value.code is ErrorCode.NOT_FOUND


@pytest.mark.parametrize("path", ["../etc/passwd", "/abs", "a//b", ""])
def test_a_review_source_never_names_an_unsafe_path(path):
    with pytest.raises(TaskError):
        ReviewSource(path=path, sha256="0" * 64, byte_length=0)
