"""Which files a shell utility writes, and which redirection targets change nothing."""

from __future__ import annotations

import pytest
from taskcore.donegate.writes import harmless_target, shell_writes


@pytest.mark.parametrize(
    ("name", "args", "files"),
    [
        ("sed", ["-i", "s/a/b/", "x.py", "y.py"], ["x.py", "y.py"]),
        ("sed", ["-i", "-e", "s/a/b/", "x.py"], ["x.py"]),
        ("sed", ["-n", "p", "x.py"], []),
        ("sed", ["-i"], ["(sed -i)"]),
        ("perl", ["-pi", "-e", "s/a/b/", "x.pl"], ["x.pl"]),
        ("tee", ["-a", "log.txt"], ["log.txt"]),
        ("mv", ["a", "b", "dir"], ["dir"]),
        ("rm", ["-rf", "build"], ["build"]),
        ("chmod", ["+x", "run.sh"], []),
        ("patch", ["-p1"], ["(patch)"]),
        ("cat", ["x.py"], []),
    ],
)
def test_the_files_a_utility_writes(name, args, files):
    assert shell_writes(name, args) == files


@pytest.mark.parametrize(
    ("target", "harmless"),
    [("/dev/null", True), ("-", True), ("/dev/fd/3", True), ("&2", True), ("out.txt", False)],
)
def test_redirections_to_devices_write_no_file(target, harmless):
    assert harmless_target(target) is harmless
