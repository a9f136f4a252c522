"""Admission: the checks made before a body is read (taskcore.admission, Service.admit)."""

import pytest
from taskcore.actors import Actor, Tier
from taskcore.admission import check_operation
from taskcore.auth import issue_token
from taskcore.clock import FakeClock
from taskcore.errors import ErrorCode, TaskError
from taskcore.service import Door, Service, Surface

from tests.taskcore.service_support import ROUTE, code_of, demo_registry, limited_service


@pytest.fixture(autouse=True)
def _both_backends(backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (tests/conftest.py)."""
    return backend


@pytest.fixture
def service(tmp_path):
    svc = Service.open(tmp_path, clock=FakeClock(), registry=demo_registry())
    yield svc
    svc.close()


def test_admit_authenticates_and_checks_the_operation_before_any_body(service):
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    actor = service.admit(issued.token, "demo.note")
    assert actor.workspace == "w1"
    assert code_of(service.admit, issued.token, "demo.admin") is ErrorCode.FORBIDDEN
    assert code_of(service.admit, issued.token, "nope") is ErrorCode.UNKNOWN_OPERATION
    assert code_of(service.admit, None, "demo.note") is ErrorCode.UNAUTHENTICATED
    assert service.admit(issued.token).token_id == issued.record.token_id  # no operation yet
    # Refusals are audited once each; admitting is not a call (the call that follows is).
    assert service.audit_count() == 3


def test_failed_authentications_from_one_address_turn_into_rate_limited(tmp_path):
    svc = limited_service(tmp_path, address_refusals_per_second=1.0, address_refusals_burst=3)
    try:
        codes = [code_of(svc.admit, "atk_bad", None, client="10.0.0.1") for _ in range(5)]
        assert codes == [ErrorCode.UNAUTHENTICATED] * 3 + [ErrorCode.RATE_LIMITED] * 2
        with pytest.raises(TaskError) as err:
            svc.admit(None, None, client="10.0.0.1")
        assert err.value.retry_after == 1
        assert err.value.transport_headers() == {"Retry-After": "1"}
        # Another address is untouched; a valid token from the limited one still gets in.
        assert code_of(svc.admit, None, None, client="10.0.0.2") is ErrorCode.UNAUTHENTICATED
        issued = issue_token(svc.storage, svc.clock, workspace="w1", tier=Tier.AGENT)
        assert svc.admit(issued.token, "demo.note", client="10.0.0.1").workspace == "w1"
        assert svc.audit_count(workspace="") == 7
    finally:
        svc.close()


def test_calls_per_token_are_limited_and_refill(tmp_path):
    svc = limited_service(tmp_path, token_calls_per_second=2.0, token_calls_burst=2)
    try:
        issued = issue_token(svc.storage, svc.clock, workspace="w1", tier=Tier.AGENT)
        svc.admit(issued.token, "demo.note")
        svc.admit(issued.token, "demo.note")
        with pytest.raises(TaskError) as err:
            svc.admit(issued.token, "demo.note")
        assert err.value.code is ErrorCode.RATE_LIMITED
        assert err.value.to_json()["details"] == {"retry_after_seconds": 1}
        svc.clock.advance(500)
        svc.admit(issued.token, "demo.note")
        assert svc.audit_count(workspace="w1", operation="demo.note") == 1  # the refusal
    finally:
        svc.close()


# -- admission from memory (Service.admit_recent) ---------------------------------------------


def test_admit_recent_admits_only_a_bearer_admit_admitted_and_only_what_admit_would(service):
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    other = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    assert service.admit_recent(issued.token, "demo.note") is None  # never admitted yet
    actor = service.admit(issued.token, "demo.note")
    assert service.admit_recent(issued.token, "demo.note") == actor
    assert service.admit_recent(issued.token, "demo.tool", door=Door.MCP) == actor
    # What admit would refuse is left to admit, which decides and audits it.
    assert service.admit_recent(issued.token, "demo.admin") is None  # tier
    assert service.admit_recent(issued.token, "demo.destroy") is None  # autonomy
    assert service.admit_recent(issued.token, "nope") is None  # unknown
    assert service.admit_recent(issued.token, "demo.note", surfaces=[Surface.ADMIN]) is None
    assert service.admit_recent(issued.token, "workflow.echo") is None  # needs a route
    assert service.admit_recent(issued.token, None) == actor  # no operation yet (MCP)
    assert service.admit_recent(None, "demo.note") is None
    assert service.admit_recent(other.token, "demo.note") is None  # another bearer
    assert service.admit_recent(issued.token + "0", "demo.note") is None
    assert service.audit_count() == 0  # deciding from memory writes nothing


def test_admit_recent_never_reads_storage(service):
    issued = issue_token(service.storage, service.clock, workspace="w1", tier=Tier.AGENT)
    service.admit(issued.token, "demo.note")

    def no_read():
        raise AssertionError("admit_recent read storage")

    service.storage.read = no_read
    service.authenticate = lambda bearer: no_read()
    assert service.admit_recent(issued.token, "demo.note") is not None


def test_admit_recent_is_off_with_no_admission_memory(tmp_path):
    svc = Service.open(tmp_path, clock=FakeClock(), registry=demo_registry(), admission_memory_ms=0)
    try:
        issued = issue_token(svc.storage, svc.clock, workspace="w1", tier=Tier.AGENT)
        svc.admit(issued.token, "demo.note")
        assert svc.admit_recent(issued.token, "demo.note") is None
    finally:
        svc.close()


def test_admit_recent_takes_one_unit_of_the_token_budget_per_request(tmp_path):
    svc = limited_service(tmp_path, token_calls_per_second=0.001, token_calls_burst=3)
    try:
        issued = issue_token(svc.storage, svc.clock, workspace="w1", tier=Tier.AGENT)
        assert svc.admit(issued.token, "demo.note")  # 1
        assert svc.admit_recent(issued.token, "demo.note")  # 2
        assert svc.admit_recent(issued.token, "demo.note")  # 3
        assert svc.admit_recent(issued.token, "demo.note") is None  # none left: admit decides
        assert code_of(svc.admit, issued.token, "demo.note") is ErrorCode.RATE_LIMITED
        assert svc.audit_count() == 1  # the refusal, audited once, by admit
    finally:
        svc.close()


# -- check_operation: one order of refusals for every door ------------------------------------

LOW = Actor(token_id="t-low", workspace="w1", tier=Tier.AGENT, autonomy=0)


def _check(name, actor=LOW, *, route=None, door=Door.HTTP, surfaces=None, granted=False):
    op = demo_registry().get(name)
    wanted = None if surfaces is None else frozenset(surfaces)
    return check_operation(op, name, actor, route, door, wanted, granted=granted)


def _refusal(*args, **kwargs) -> ErrorCode:
    with pytest.raises(TaskError) as info:
        _check(*args, **kwargs)
    return info.value.code


def test_check_operation_refuses_in_one_order_unknown_door_route_tier_autonomy():
    assert _refusal("nope") is ErrorCode.UNKNOWN_OPERATION
    # Outside the route's surfaces an operation is unknown there, before anything else.
    assert _refusal("demo.admin", surfaces=[Surface.QUEUE]) is ErrorCode.UNKNOWN_OPERATION
    # Not a tool: MCP does not offer it, whatever the tier.
    assert _refusal("demo.admin", door=Door.MCP) is ErrorCode.NOT_FOUND
    # A route is checked before the tier.
    assert _refusal("workflow.echo", surfaces=[Surface.WORKFLOW]) is ErrorCode.BAD_INPUT
    # The tier before the autonomy: demo.admin needs admin (LOW has neither).
    assert _refusal("demo.admin") is ErrorCode.FORBIDDEN
    assert _refusal("demo.destroy") is ErrorCode.AUTONOMY_EXCEEDED


def test_an_approval_grant_lifts_the_autonomy_bound_and_nothing_else():
    assert _check("demo.destroy", granted=True).name == "demo.destroy"
    assert _refusal("demo.admin", granted=True) is ErrorCode.FORBIDDEN
    assert _check("workflow.echo", route=ROUTE, granted=True).name == "workflow.echo"


def test_an_unknown_name_is_shown_bounded_and_without_the_workflow_prefix():
    with pytest.raises(TaskError) as info:
        _check("workflow.nope", surfaces=[Surface.WORKFLOW])
    assert "'nope'" in info.value.message
    with pytest.raises(TaskError) as info:
        _check("x" * 500)
    assert "x" * 64 + "'" in info.value.message
    assert "x" * 65 not in info.value.message


def test_mcp_refusals_point_at_tools_list():
    with pytest.raises(TaskError) as info:
        _check("nope", door=Door.MCP)
    assert info.value.message.endswith("list the tools with tools/list")
    assert "no tool 'nope'" in info.value.message
