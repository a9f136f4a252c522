"""The authority's descriptor-signing key: generated once, private, fail-closed verification."""

from __future__ import annotations

import json
import os

import attrs
import pytest
from taskcore.contract.collector_descriptor import descriptor_digest, verify_descriptor
from taskcore.errors import ErrorCode, TaskError
from taskcore.evidence.authority_key import (
    AUTHORITY_KEY_FILE,
    ensure_authority_key,
    load_authority_key,
    sign_descriptor,
)


def test_the_key_is_generated_once_and_never_replaced(tmp_path):
    first = ensure_authority_key(tmp_path / "data")
    again = ensure_authority_key(tmp_path / "data")
    assert again == first
    path = tmp_path / "data" / AUTHORITY_KEY_FILE
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert first.seed not in repr(first)


def test_a_missing_key_is_not_found_and_nothing_is_created(tmp_path):
    with pytest.raises(TaskError) as err:
        load_authority_key(tmp_path)
    assert err.value.code is ErrorCode.NOT_FOUND
    assert not (tmp_path / AUTHORITY_KEY_FILE).exists()


def test_a_key_file_others_can_read_is_refused(tmp_path):
    ensure_authority_key(tmp_path)
    os.chmod(tmp_path / AUTHORITY_KEY_FILE, 0o644)
    with pytest.raises(TaskError) as err:
        load_authority_key(tmp_path)
    assert err.value.code is ErrorCode.INTEGRITY_FAILURE


def test_a_key_file_whose_public_key_is_not_its_seed_s_is_refused(tmp_path):
    key = ensure_authority_key(tmp_path)
    path = tmp_path / AUTHORITY_KEY_FILE
    body = json.loads(path.read_text())
    body["public_key"] = "0" * 64
    os.chmod(path, 0o600)
    path.write_text(json.dumps(body))
    with pytest.raises(TaskError) as err:
        load_authority_key(tmp_path)
    assert err.value.code is ErrorCode.INTEGRITY_FAILURE
    assert key.public_key != "0" * 64


def test_a_signed_descriptor_verifies_under_the_pinned_key_only(tmp_path, make_descriptor):
    key = ensure_authority_key(tmp_path / "a")
    other = ensure_authority_key(tmp_path / "b")
    signed = sign_descriptor(make_descriptor(), key)
    assert signed.authority_public_key == key.public_key
    verify_descriptor(signed, key.public_key)
    with pytest.raises(TaskError) as err:
        verify_descriptor(signed, other.public_key)
    assert err.value.code is ErrorCode.INVALID_SIGNATURE


@pytest.mark.parametrize(
    "change",
    [
        lambda d: attrs.evolve(d, binding=attrs.evolve(d.binding, fence=d.binding.fence + 1)),
        lambda d: attrs.evolve(d, authority_signature=None),
        lambda d: attrs.evolve(d, authority_signature="0" * 128),
        lambda d: attrs.evolve(d, request_sha256="f" * 64),
    ],
)
def test_any_change_to_a_signed_descriptor_fails_verification(tmp_path, make_descriptor, change):
    key = ensure_authority_key(tmp_path)
    signed = sign_descriptor(make_descriptor(), key)
    with pytest.raises(TaskError) as err:
        verify_descriptor(change(signed), key.public_key)
    assert err.value.code is ErrorCode.INVALID_SIGNATURE


def test_the_signed_digest_ignores_only_the_signature_field(tmp_path, make_descriptor):
    key = ensure_authority_key(tmp_path)
    signed = sign_descriptor(make_descriptor(), key)
    assert descriptor_digest(signed) == descriptor_digest(
        attrs.evolve(signed, authority_signature="1" * 128)
    )
    assert descriptor_digest(signed) != descriptor_digest(
        attrs.evolve(signed, authority_public_key=None)
    )
