from taskcore.errors import ErrorCode, ErrorKind, TaskError


def test_every_code_has_a_kind_with_a_status_and_an_exit():
    for code in ErrorCode:
        assert isinstance(code.kind, ErrorKind)
        assert 400 <= code.kind.http_status <= 599
        assert code.kind.exit_status > 0


def test_wire_spellings_are_unique_and_upper_snake():
    spellings = [c.value for c in ErrorCode]
    assert len(spellings) == len(set(spellings))
    for s in spellings:
        assert s == s.upper()
        assert s.replace("_", "").isalpha()


def test_only_internal_maps_to_500():
    assert [c for c in ErrorCode if c.kind.http_status == 500] == [ErrorCode.INTERNAL]


def test_nested_path_prefixes_the_outer_location():
    err = TaskError(ErrorCode.WRONG_TYPE, "expected a string", path="$.outcome")
    nested = err.at("$.criteria[2]")
    assert nested.path == "$.criteria[2].outcome"
    assert nested.code is ErrorCode.WRONG_TYPE


def test_json_body_is_error_and_code():
    body = TaskError(ErrorCode.NOT_FOUND, "no such task").to_json()
    assert body == {"error": "no such task", "code": "NOT_FOUND"}


def test_from_wire_round_trips():
    for code in ErrorCode:
        assert ErrorCode.from_wire(code.value) is code


def test_load_and_storage_refusals_say_when_to_retry():
    for code in (ErrorCode.STORAGE_FULL, ErrorCode.OVERLOADED, ErrorCode.JOURNAL_MISSING):
        assert code.kind.http_status == 503
    assert ErrorCode.RATE_LIMITED.kind.http_status == 429
    err = TaskError(ErrorCode.STORAGE_FULL, "full", retry_after=30)
    assert err.transport_headers() == {"Retry-After": "30"}
    assert err.to_json()["details"] == {"retry_after_seconds": 30}
    assert err.at("$.a").retry_after == 30


def test_a_401_asks_for_a_bearer_token_and_others_add_nothing():
    assert TaskError(ErrorCode.UNAUTHENTICATED, "who").transport_headers() == {
        "WWW-Authenticate": "Bearer"
    }
    assert TaskError(ErrorCode.NOT_FOUND, "no").transport_headers() == {}
    assert TaskError(ErrorCode.BUSY, "busy", retry_after=0).retry_after == 1  # never 0
