import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.canonical import canonical_json
from taskcore.codec import dumps
from taskcore.contract import (
    CommandCollectorProfile,
    CommandRecipe,
    FiniteReviewCollectorProfile,
    IsolationPolicy,
    SandboxMode,
    TransportBasis,
    decode_collector_profile,
)
from taskcore.contract.collector import DEFAULT_ISOLATION
from taskcore.errors import ErrorCode, TaskError

from .strategies import command_profiles, isolation_policies, recipes, review_profiles
from .wire import CODEC, check_round_trip, check_strictness, expect_error


def recipe(**changes: object) -> CommandRecipe:
    base = CommandRecipe(
        argv=("python", "-m", "pytest", "-q"),
        working_directory=".",
        environment_allowlist=("PATH", "LANG"),
        timeout_ms=600_000,
        output_limit_bytes=1_048_576,
    )
    return attrs.evolve(base, **changes)


def command_profile(**changes: object) -> CommandCollectorProfile:
    base = CommandCollectorProfile(
        version=1,
        kind="command",
        profile_id="tests-cmd",
        repository_id="acme.widgets",
        workflow_profile_id="default",
        step_id="tests",
        registration_id="reg-1",
        registration_epoch=1,
        recipe=recipe(),
        runtime_identity_sha256="c" * 64,
    )
    return attrs.evolve(base, **changes)


def review_profile(**changes: object) -> FiniteReviewCollectorProfile:
    base = FiniteReviewCollectorProfile(
        version=1,
        kind="finite_review",
        profile_id="review-1",
        repository_id="acme.widgets",
        workflow_profile_id="default",
        step_id="review",
        registration_id="reg-1",
        registration_epoch=1,
        executable_sha256="d" * 64,
        provider_scope="anthropic",
        transport_basis=TransportBasis.CLAUDE_CODE,
        model="claude-model",
        policy_digest="e" * 64,
        required_paths=("src", "tests/test_x.py"),
        max_calls=8,
        max_input_tokens=200_000,
        max_output_tokens=20_000,
        timeout_ms=900_000,
    )
    return attrs.evolve(base, **changes)


@given(recipes)
def test_recipes_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


@given(st.one_of(command_profiles, review_profiles))
def test_profiles_round_trip_and_decode_strictly_through_the_kind_dispatch(obj):
    check_round_trip(obj, decoder=decode_collector_profile)
    assert check_strictness(obj, decoder=decode_collector_profile) > 0
    check_round_trip(obj)


def test_the_kind_selects_the_profile_type():
    assert decode_collector_profile(CODEC.unstructure(command_profile())) == command_profile()
    assert decode_collector_profile(dumps(CODEC.unstructure(review_profile()))) == review_profile()


@pytest.mark.parametrize(
    ("kind", "code"),
    [("script", ErrorCode.INVALID_VALUE), (1, ErrorCode.WRONG_TYPE), (None, ErrorCode.WRONG_TYPE)],
)
def test_an_unknown_or_mistyped_kind_is_refused(kind, code):
    tree = CODEC.unstructure(command_profile())
    tree["kind"] = kind
    expect_error(CommandCollectorProfile, tree, code, "$.kind", decoder=decode_collector_profile)


def test_a_missing_kind_is_a_missing_field():
    tree = CODEC.unstructure(command_profile())
    del tree["kind"]
    expect_error(
        CommandCollectorProfile,
        tree,
        ErrorCode.MISSING_FIELD,
        "$.kind",
        decoder=decode_collector_profile,
    )


def test_a_profile_that_is_not_an_object_is_refused():
    with pytest.raises(TaskError) as info:
        decode_collector_profile(b"[1, 2]")
    assert info.value.code is ErrorCode.WRONG_TYPE


def test_a_command_profile_with_review_fields_is_refused():
    tree = CODEC.unstructure(command_profile())
    tree["model"] = "claude-model"
    expect_error(
        CommandCollectorProfile,
        tree,
        ErrorCode.UNKNOWN_FIELD,
        "$.model",
        decoder=decode_collector_profile,
    )


@pytest.mark.parametrize("workdir", ["/abs", "../up", "a\\b", "C:", ""])
def test_a_recipe_working_directory_obeys_the_path_rules(workdir):
    tree = CODEC.unstructure(command_profile())
    tree["recipe"]["working_directory"] = workdir
    expect_error(
        CommandCollectorProfile,
        tree,
        ErrorCode.INVALID_PATH,
        "$.recipe.working_directory",
        decoder=decode_collector_profile,
    )


def test_a_recipe_argument_is_non_empty_and_has_no_nul():
    tree = CODEC.unstructure(recipe())
    tree["argv"] = ["python", ""]
    expect_error(CommandRecipe, tree, ErrorCode.OUT_OF_BOUNDS, "$.argv[1]")
    tree["argv"] = ["python", "a\x00b"]
    expect_error(CommandRecipe, tree, ErrorCode.INVALID_VALUE, "$.argv[1]")


def test_an_environment_allowlist_holds_names_not_assignments():
    tree = CODEC.unstructure(recipe())
    tree["environment_allowlist"] = ["TOKEN=secret"]
    expect_error(CommandRecipe, tree, ErrorCode.INVALID_VALUE, "$.environment_allowlist[0]")


def test_required_paths_obey_the_path_rules():
    tree = CODEC.unstructure(review_profile())
    tree["required_paths"] = ["src", "../etc"]
    expect_error(
        FiniteReviewCollectorProfile,
        tree,
        ErrorCode.INVALID_PATH,
        "$.required_paths[1]",
        decoder=decode_collector_profile,
    )


@pytest.mark.parametrize("basis", [TransportBasis.FIXTURE, TransportBasis.HTTP_UNQUALIFIED])
def test_fixture_and_unqualified_http_bases_are_refused_at_installation(basis):
    profile = review_profile(transport_basis=basis)  # decodes: import must be able to say no
    with pytest.raises(TaskError) as info:
        profile.validate_for_installation()
    assert (info.value.code, info.value.path) == (ErrorCode.INVALID_VALUE, "$.transport_basis")


def test_the_claude_code_basis_may_be_installed():
    review_profile().validate_for_installation()


def test_a_profile_binds_one_enrollment_epoch_repository_workflow_profile_and_step():
    for cls in (CommandCollectorProfile, FiniteReviewCollectorProfile):
        names = {f.name for f in attrs.fields(cls)}
        assert {
            "registration_id",
            "registration_epoch",
            "repository_id",
            "workflow_profile_id",
            "step_id",
        } <= names


def test_finite_budgets_are_bounded():
    tree = CODEC.unstructure(review_profile())
    tree["max_calls"] = 0
    expect_error(FiniteReviewCollectorProfile, tree, ErrorCode.OUT_OF_BOUNDS, "$.max_calls")
    tree["max_calls"] = 1001
    expect_error(FiniteReviewCollectorProfile, tree, ErrorCode.OUT_OF_BOUNDS, "$.max_calls")


@given(isolation_policies)
def test_isolation_policies_round_trip_and_decode_strictly(obj):
    check_round_trip(obj)
    assert check_strictness(obj) > 0


def test_a_profile_without_isolation_keeps_its_earlier_bytes():
    plain = command_profile()
    assert b"isolation" not in canonical_json(plain)
    assert "isolation" not in CODEC.unstructure(plain)
    tree = CODEC.unstructure(plain)
    assert decode_collector_profile({**tree, "isolation": None}) == plain
    assert plain.isolation_policy == DEFAULT_ISOLATION
    isolated = command_profile(isolation=DEFAULT_ISOLATION)
    assert canonical_json(isolated).startswith(canonical_json(plain)[:-1] + b',"isolation":{')


@pytest.mark.parametrize(
    ("paths", "code"),
    [
        (("/proc/../etc",), ErrorCode.INVALID_PATH),
        (("/opt/x", "/opt/x"), ErrorCode.INVALID_VALUE),
        (("/",), ErrorCode.OUT_OF_BOUNDS),
    ],
)
def test_exposed_paths_are_checked(paths, code):
    tree = CODEC.unstructure(DEFAULT_ISOLATION)
    tree["read_only_paths"] = list(paths)
    with pytest.raises(TaskError) as err:
        CODEC.structure(tree, IsolationPolicy)
    assert err.value.code is code


def test_sandbox_modes_are_ordered():
    assert [m.strength for m in SandboxMode] == [0, 1, 2]
