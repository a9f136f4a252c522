"""Request identity: the canonical bytes and digest a request ID binds, kind by kind."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from taskcore.contract import (
    AgentIdentity,
    MutationAction,
    TaskMutationRequest,
    request_canonical_bytes,
    request_digest,
)
from taskcore.digest import domain_digest, request_domain
from taskcore.errors import ErrorCode, TaskError

from . import samples
from .strategies import agents, mutations
from .test_requests import cancel, heartbeat
from .wire import CODEC, changed

# -- request identity -------------------------------------------------------------------------


def test_request_digest_is_domain_separated_by_action():
    agent = samples.AGENT
    hb, cx = heartbeat(), cancel()
    assert request_digest("heartbeat", hb, agent) == domain_digest(
        request_domain("heartbeat"), request_canonical_bytes("heartbeat", hb, agent)
    )
    assert request_domain("heartbeat") == "agentscm.agent-workflow-request.v1.heartbeat"
    assert request_digest("heartbeat", hb, agent) != request_digest("cancel", cx, agent)


def test_an_identical_retry_has_identical_bytes():
    agent = samples.AGENT
    again = CODEC.decode(TaskMutationRequest, CODEC.dumps(cancel()))
    assert request_canonical_bytes("cancel", again, agent) == request_canonical_bytes(
        "cancel", cancel(), agent
    )


MUTATION_FIELDS = [f.name for f in attrs.fields(TaskMutationRequest) if f.name != "version"]


@pytest.mark.parametrize("name", MUTATION_FIELDS)
def test_the_same_request_id_with_any_changed_field_has_other_bytes(name):
    before = cancel()
    if name == "action":
        after = attrs.evolve(before, action=MutationAction.RECONCILE)
    elif name == "executor":
        after = attrs.evolve(before, executor=None)
    else:
        after = attrs.evolve(before, **{name: changed(getattr(before, name))})
    agent = samples.AGENT
    kind_before, kind_after = before.action.value, after.action.value
    assert request_canonical_bytes(kind_after, after, agent) != request_canonical_bytes(
        kind_before, before, agent
    )
    assert request_digest(kind_after, after, agent) != request_digest(kind_before, before, agent)


def test_the_same_request_from_another_actor_has_other_bytes():
    other = AgentIdentity(owner_id="acme", agent_id="agent-2")
    assert request_digest("cancel", cancel(), samples.AGENT) != request_digest(
        "cancel", cancel(), other
    )


def test_request_bytes_are_kind_then_agent_then_request():
    raw = request_canonical_bytes("heartbeat", heartbeat(), samples.AGENT)
    assert raw.startswith(
        b'{"kind":"heartbeat","agent":{"owner_id":"acme","agent_id":"agent-1"},"request":'
        b'{"version":1,"request_id":"hb-1","action":"heartbeat",'
    )


@pytest.mark.parametrize(
    ("kind", "req"),
    [
        ("cancel", heartbeat()),
        ("heartbeat", cancel()),
        ("result", samples.claim()),
        ("claim", samples.assertion()),
        ("finish", heartbeat()),
    ],
)
def test_a_kind_that_does_not_fit_the_request_is_refused(kind, req):
    with pytest.raises(TaskError) as info:
        request_digest(kind, req, samples.AGENT)
    assert info.value.code is ErrorCode.INVALID_VALUE


@pytest.mark.parametrize("kind", ["claim", "collector_claim"])
def test_a_claim_may_be_hashed_as_claim_or_collector_claim_with_different_digests(kind):
    other = "collector_claim" if kind == "claim" else "claim"
    assert request_digest(kind, samples.claim(), samples.AGENT) != request_digest(
        other, samples.claim(), samples.AGENT
    )


def test_a_result_is_hashed_under_its_own_domain():
    digest = request_digest("result", samples.assertion(), samples.AGENT)
    assert digest == domain_digest(
        "agentscm.agent-workflow-request.v1.result",
        request_canonical_bytes("result", samples.assertion(), samples.AGENT),
    )


@given(mutations(), agents)
def test_every_mutation_digest_is_stable_across_a_round_trip(req, agent):
    kind = req.action.value
    again = CODEC.decode(TaskMutationRequest, CODEC.dumps(req))
    assert request_digest(kind, again, agent) == request_digest(kind, req, agent)
