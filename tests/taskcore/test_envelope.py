"""The workflow envelope: routes from the URL, the strict request envelope, the success body."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.codec import default_codec
from taskcore.envelope import Route, WorkflowCall, wrap_workflow
from taskcore.errors import ErrorCode, TaskError

_SEGMENT = st.from_regex(r"[A-Za-z0-9._-]{1,128}", fullmatch=True).filter(
    lambda s: s not in (".", "..")
)


@given(owner=_SEGMENT, name=_SEGMENT, profile=_SEGMENT)
def test_a_route_takes_one_or_two_identifier_segments(owner, name, profile):
    assert Route(repository=name, profile=profile).repository == name
    assert Route(repository=f"{owner}/{name}", profile=profile).repository == f"{owner}/{name}"


@pytest.mark.parametrize(
    ("repository", "profile"),
    [
        ("..", "p"),
        ("a/b/c", "p"),
        ("a/", "p"),
        ("", "p"),
        ("a b", "p"),
        ("acme", "."),
        ("acme", "x" * 129),
        ("acme", "a/b"),
    ],
)
def test_a_route_outside_the_identifier_pattern_is_invalid(repository, profile):
    with pytest.raises(TaskError) as err:
        Route(repository=repository, profile=profile)
    assert err.value.code is ErrorCode.INVALID_VALUE


def test_the_envelope_is_decoded_strictly():
    codec = default_codec()
    call = codec.decode(WorkflowCall, b'{"operation": "claim", "request": {"a": 1}}')
    assert (call.operation, call.request) == ("claim", {"a": 1})
    for bad in (
        b'{"operation": "claim"}',
        b'{"operation": "Claim", "request": {}}',
        b'{"operation": "claim", "request": {}, "extra": 1}',
        b'{"operation": "claim", "request": []}',
    ):
        with pytest.raises(TaskError):
            codec.decode(WorkflowCall, bad)


@given(st.dictionaries(st.text(max_size=8), st.integers(), max_size=4))
def test_the_success_body_embeds_the_result_bytes_unchanged(result):
    raw = json.dumps(result, separators=(",", ":")).encode()
    body = wrap_workflow("status", raw)
    assert body.endswith(b',"result":' + raw + b"}")
    parsed = json.loads(body)
    assert parsed["operation"] == "status"
    assert parsed["result"] == result
    assert set(parsed) == {"capability", "schema_version", "operation", "result"}
