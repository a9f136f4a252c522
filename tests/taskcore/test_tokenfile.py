"""Reading a token file: the light module clients use, re-exported by taskcore.auth."""

import pytest
from taskcore import auth
from taskcore.errors import ErrorCode, TaskError
from taskcore.tokenfile import no_token_error, read_token_file


def test_auth_re_exports_the_same_functions():
    assert auth.read_token_file is read_token_file
    assert auth.no_token_error is no_token_error


def test_a_token_is_read_without_surrounding_whitespace(tmp_path):
    path = tmp_path / "t"
    path.write_text("  atk_x_y \n")
    assert read_token_file(path) == "atk_x_y"


@pytest.mark.parametrize("content", [None, "", "   \n", b"\xff\xfe"])
def test_a_missing_empty_or_unreadable_file_is_unauthenticated(tmp_path, content):
    path = tmp_path / "t"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(TaskError) as info:
        read_token_file(path)
    assert info.value.code is ErrorCode.UNAUTHENTICATED
    assert str(path)[:256] in info.value.message
