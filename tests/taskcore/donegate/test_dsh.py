"""The dsh session reader: frames, packed rows, events, and its place in the index and hook.

The sessions under ``fixtures/dsh`` were written by dsh's own persistence plugin (see the
README there); the frame-shape cases are built here from those bytes and from frames made
with the Zstandard encoder and by hand (RFC 8878).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from taskcore.donegate import dsh
from taskcore.donegate.config import GateConfig, checked_transcript, harness_of
from taskcore.donegate.evidence import Evidence
from taskcore.donegate.hook import run
from taskcore.donegate.index import GateIndex, read_transcript
from taskcore.donegate.ladder import evaluate
from taskcore.donegate.session_gate import SessionGateIn, session_gate
from taskcore.errors import TaskError

from tests.taskcore.donegate.conftest import FIXTURES

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd

DSH_FIXTURES = FIXTURES / "dsh"
PROJECT = "--work-acme-api--"


def session_file(scenario: str, kind: str = "zstd") -> Path:
    name = "session.jsonl" if kind == "raw" else "session.jsonl.zstd"
    return DSH_FIXTURES / kind / PROJECT / f"s-{scenario}" / name


def read_all(path: Path) -> tuple[Evidence, int, bytes]:
    return read_transcript(path, "dsh", None, 0, path.stat().st_size)


def events_of(path: Path) -> list[dict[str, Any]]:
    """Every decoded event (header excluded), packed rows expanded."""
    out: list[dict[str, Any]] = []
    for line, end in dsh.iter_lines(path, 0, path.stat().st_size):
        assert end != -2
        value = json.loads(line)
        if value.get("type") == "session":
            continue
        out.extend(dsh.decode_record(value) or [])
    return out


# -- sessions written by dsh -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "rung", "checks", "files"),
    [
        ("edit_only", "artifact_changed", [], ["calc.py"]),
        ("verified", "verified", [("test", "passed", 0)], ["calc.py"]),
        ("failed", "artifact_changed", [("test", "failed", 1)], ["/work/acme-api/calc.py"]),
        ("background", "verified", [("build", "passed", 0)], ["main.go"]),
        ("aborted", "artifact_changed", [("test", "interrupted", None)], ["calc.py"]),
    ],
)
def test_a_session_written_by_dsh_lands_on_its_rung(scenario, rung, checks, files):
    path = session_file(scenario)
    ev, offset, tail = read_all(path)
    assert (offset, tail) == (path.stat().st_size, b"")
    assert (ev.session_id, ev.cwd, ev.prompts) == (f"s-{scenario}", "/work/acme-api", 1)
    assert ev.bad_lines == 0
    assert ev.files == files
    assert [(c.kind, c.status, c.exit) for c in ev.checks] == checks
    verdict = evaluate([ev])
    assert verdict.rung_name == rung
    assert verdict.claimed == (scenario != "aborted")  # aborted: no last word


def test_the_file_is_a_header_frame_then_one_frame_per_batch():
    data = session_file("verified").read_bytes()
    scan = dsh.scan_frames(data)
    assert (scan.end, scan.torn, scan.bad) == (len(data), None, None)
    assert len(scan.frames) == 5  # the header and four flushed batches
    first = zstd.decompress(data[: scan.frames[0][1]])
    assert first.count(b"\n") == 1
    assert json.loads(first)["type"] == "session"


def test_packed_rows_expand_to_a_contiguous_log_equal_to_the_unpacked_one():
    packed = events_of(session_file("verified"))
    unpacked = events_of(session_file("verified", "unpacked"))
    raw = events_of(session_file("verified", "raw"))
    assert [e["seq"] for e in packed] == list(range(len(packed)))

    def shape(events):
        return [
            (e["type"], e["seq"], json.dumps(e["data"].get("chunk"), sort_keys=True))
            for e in events
        ]

    assert shape(packed) == shape(unpacked) == shape(raw)
    stored = [
        json.loads(line)["type"] for line, _ in dsh.iter_lines(session_file("verified"), 0, 10**9)
    ]
    assert "tool-call-chunks" in stored
    assert "assistant/chunk" in stored  # a run of one, and a run that breaks on the name
    edit_only = [
        json.loads(line)["type"] for line, _ in dsh.iter_lines(session_file("edit_only"), 0, 10**9)
    ]
    assert {"text-chunks", "reasoning-chunks", "tool-call-chunks"} <= set(edit_only)


def test_a_plugin_message_is_not_a_prompt():
    ev, _, _ = read_all(session_file("failed"))
    assert ev.prompts == 1
    assert ev.last_prompt == "fix the bug"


# -- frame shapes ------------------------------------------------------------------------------


def test_a_file_holding_only_the_header_frame(tmp_path):
    data = session_file("edit_only").read_bytes()
    first_end = dsh.scan_frames(data).frames[0][1]
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(data[:first_end])
    ev, offset, tail = read_all(path)
    assert (offset, tail) == (first_end, b"")
    assert ev.session_id == "s-edit_only"
    assert ev.lines == 1


@pytest.mark.parametrize("cut", [1, 3, 5, 9, -5, -1])
def test_a_torn_last_frame_is_never_stored_as_read(tmp_path, cut):
    data = session_file("verified").read_bytes()
    frames = dsh.scan_frames(data).frames
    last_start = frames[-1][0]
    torn_at = last_start + cut if cut > 0 else len(data) + cut
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(data[:torn_at])
    ev, offset, tail = read_all(path)
    assert offset == last_start
    assert ev.bad_lines == 0
    assert evaluate([ev]).rung_name == "verified"  # the check was in an earlier frame
    assert b"Done: the test passes." not in tail or cut < 0


def test_the_index_reads_a_grown_file_from_the_last_complete_frame(tmp_path):
    data = session_file("failed").read_bytes()
    frames = dsh.scan_frames(data).frames
    root = tmp_path / "dsh"
    path = root / PROJECT / "s-failed" / "session.jsonl.zstd"
    path.parent.mkdir(parents=True)
    path.write_bytes(data[: frames[2][1] + 7])  # two batches and a torn third
    config = GateConfig(
        index_path=tmp_path / "gate.sqlite",
        claude_root=tmp_path / "none-c",
        codex_root=tmp_path / "none-x",
        dsh_root=root,
    )
    index = GateIndex(config)
    try:
        first = index.refresh(path)
        assert first.harness == "dsh"
        assert first.session_key == "dsh:s-failed"
        assert first.bytes_read == frames[2][1]
        assert (
            evaluate([first.evidence]).missing
            == "no test, build, or lint command ran in this session"
        )
        path.write_bytes(data)
        second = index.refresh(path)
        assert second.bytes_read == len(data) - frames[2][1]
        assert [(c.status, c.exit) for c in second.evidence.checks] == [("failed", 1)]
        assert second.evidence.prompts == 1
    finally:
        index.close()


def test_a_frame_whose_checksum_fails_ends_the_read(tmp_path):
    data = bytearray(session_file("verified").read_bytes())
    frames = dsh.scan_frames(bytes(data)).frames
    start, end = frames[2]
    data[end - 2] ^= 0xFF  # inside the frame's content checksum
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(bytes(data))
    ev, offset, _tail = read_all(path)
    assert offset == start
    assert ev.bad_lines == 1


def test_bytes_that_are_not_a_frame_end_the_read(tmp_path):
    data = session_file("verified").read_bytes()
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(data + b'{"type":"user/message"}\n')
    ev, offset, _tail = read_all(path)
    assert offset == len(data)
    assert ev.bad_lines == 1
    assert dsh.scan_frames(path.read_bytes()).bad == len(data)


def test_a_skippable_frame_is_stepped_over(tmp_path):
    data = session_file("verified").read_bytes()
    frames = dsh.scan_frames(data).frames
    cut = frames[1][1]
    skippable = (0x184D2A5E).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(data[:cut] + skippable + data[cut:])
    ev, offset, _ = read_all(path)
    assert offset == len(data) + len(skippable)
    assert [(c.status, c.exit) for c in ev.checks] == [("passed", 0)]
    assert len(dsh.scan_frames(path.read_bytes()).frames) == len(frames)


HEADER = (
    b'{"type":"session","version":0,"id":"s-made","cwd":"/w","createdAt":1,"delegationDepth":0}\n'
)
CALL = (
    b'{"type":"tool/call","seq":0,"time":2,"data":{"turn":0,"step":0,"callId":"c1",'
    b'"name":"bash","arguments":"{\\"command\\":\\"cargo test\\"}"}}\n'
)
RESULT = (
    b'{"type":"tool/result","seq":1,"time":3,"data":{"turn":0,"step":0,"message":{"role":"user",'
    b'"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}]}]}}}\n'
)


def raw_block_frame(content: bytes, *, checksum_flag: bool = False) -> bytes:
    """A single-segment frame with one raw block (RFC 8878 3.1.1), made by hand."""
    assert len(content) < 256
    fhd = 0x20 | (0x04 if checksum_flag else 0)
    block = (1 | (0 << 1) | (len(content) << 3)).to_bytes(3, "little")
    return (0xFD2FB528).to_bytes(4, "little") + bytes([fhd, len(content)]) + block + content


def rle_block_frame(byte: bytes, count: int) -> bytes:
    """A frame with one RLE block: ``count`` copies of ``byte``."""
    block = (1 | (1 << 1) | (count << 3)).to_bytes(3, "little")
    return (0xFD2FB528).to_bytes(4, "little") + bytes([0x20, count]) + block + byte


def test_frames_of_every_header_and_block_layout(tmp_path):
    big = (
        HEADER
        + CALL
        + b"".join(
            b'{"type":"step/start","seq":%d,"time":4,"data":{"turn":0,"step":%d}}\n' % (i, i)
            for i in range(2, 6000)
        )
        + RESULT.replace(b'"seq":1', b'"seq":6000')
    )
    streamed = zstd.ZstdCompressor()
    frames = [
        # one-shot, pledged size, checksum on (dsh's own shape)
        zstd.compress(big[: len(HEADER)], options={zstd.CompressionParameter.checksum_flag: 1}),
        # streamed: no content size, a window descriptor, several blocks
        streamed.compress(big[len(HEADER) :], mode=zstd.ZstdCompressor.FLUSH_FRAME),
    ]
    assert len(big) - len(HEADER) > 128 * 1024  # more than one block
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(b"".join(frames) + rle_block_frame(b"\n", 3))
    scan = dsh.scan_frames(path.read_bytes())
    assert [e - s for s, e in scan.frames] == [*(len(f) for f in frames), 10]
    # The decoder library agrees on every frame's size.
    data = path.read_bytes()
    assert [e - s for s, e in scan.frames] == [
        zstd.get_frame_size(data[s:]) for s, _ in scan.frames
    ]
    ev, offset, _ = read_all(path)
    assert offset == path.stat().st_size
    assert (ev.bad_lines, ev.skipped_lines) == (0, 0)  # the blank lines are not records
    assert [(c.kind, c.status) for c in ev.checks] == [("test", "passed")]


def test_a_hand_made_raw_block_frame_decodes():
    path_bytes = raw_block_frame(HEADER[:-1] + b"\n")
    assert dsh.scan_frames(path_bytes).frames == [(0, len(path_bytes))]
    assert zstd.decompress(path_bytes) == HEADER


@pytest.mark.parametrize(
    ("fhd", "extra"),
    [
        (0x01, 1),  # one-byte dictionary id, window descriptor
        (0x02, 2),  # two-byte dictionary id
        (0x03, 4),  # four-byte dictionary id
        (0x40, 2),  # two-byte content size
        (0x80, 4),  # four-byte content size
        (0xC0, 8),  # eight-byte content size
    ],
)
def test_the_scan_sizes_every_frame_header_field(fhd, extra):
    block = (1 | (0 << 1) | (2 << 3)).to_bytes(3, "little")
    frame = (0xFD2FB528).to_bytes(4, "little") + bytes([fhd, 0x00]) + b"\0" * extra + block + b"hi"
    assert dsh.scan_frames(frame).frames == [(0, len(frame))]
    assert dsh.scan_frames(frame[:-1]).torn == 0


def test_a_reserved_bit_or_block_type_is_not_a_frame():
    reserved_bit = (0xFD2FB528).to_bytes(4, "little") + bytes([0x28, 2]) + b"\x11\x00\x00hi"
    reserved_block = (0xFD2FB528).to_bytes(4, "little") + bytes([0x20, 2]) + b"\x17\x00\x00hi"
    assert dsh.scan_frames(reserved_bit).bad == 0
    assert dsh.scan_frames(reserved_block).bad == 0


def test_a_frame_over_the_size_bound_is_not_decoded(monkeypatch, tmp_path):
    monkeypatch.setattr(dsh, "GATE_DSH_FRAME_MAX_BYTES", 64)
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(zstd.compress(HEADER + CALL))
    assert list(dsh.iter_lines(path, 0, path.stat().st_size)) == [(b"", -2)]


def test_a_raw_session_keeps_its_partial_last_line_out_of_the_offset(tmp_path):
    data = session_file("verified", "raw").read_bytes()
    path = tmp_path / "session.jsonl"
    path.write_bytes(data[:-10])
    _ev, offset, tail = read_all(path)
    assert offset == data[:-10].rfind(b"\n") + 1
    assert tail
    assert not tail.endswith(b"\n")
    assert harness_of(path, GateConfig.from_env()) == "dsh"


# -- packed rows -------------------------------------------------------------------------------

ROW = {
    "type": "tool-call-chunks",
    "seq0": 7,
    "time0": 100,
    "data": {
        "turn": 0,
        "step": 1,
        "index": 1,
        "dt": [0, 5],
        "id": "c9",
        "name": "bash",
        "args": ["{", "}", ""],
    },
}


def test_a_tool_call_row_expands_with_its_name_and_times():
    events = dsh.decode_record(ROW)
    assert [(e["seq"], e["time"]) for e in events] == [(7, 100), (8, 100), (9, 105)]
    assert events[0]["data"]["chunk"] == {
        "type": "tool-call-delta",
        "index": 1,
        "id": "c9",
        "name": "bash",
        "argumentsDelta": "{",
    }
    nameless = {**ROW, "data": {k: v for k, v in ROW["data"].items() if k != "name"}}
    assert "name" not in dsh.decode_record(nameless)[0]["data"]["chunk"]
    reasoning = dsh.decode_record(
        {
            "type": "reasoning-chunks",
            "seq0": 0,
            "time0": 0,
            "data": {"turn": 0, "step": 0, "index": 0, "dt": [], "texts": ["x"]},
        }
    )
    assert reasoning[0]["data"]["chunk"] == {"type": "reasoning-delta", "index": 0, "text": "x"}


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"seq0": -1},
        {"seq0": 2**53},
        {"time0": "1"},
        {"data": []},
        {"data": {**ROW["data"], "dt": [0]}},
        {"data": {**ROW["data"], "dt": [0, 0.5]}},
        {"data": {**ROW["data"], "args": []}},
        {"data": {**ROW["data"], "args": ["{", 1, "}"]}},
        {"data": {**ROW["data"], "name": 3}},
        {"data": {**ROW["data"], "id": None}},
        {"data": {**ROW["data"], "turn": "0"}},
        {"data": {**ROW["data"], "texts": ["a"]}},
        {"type": "text-chunks"},
    ],
)
def test_a_malformed_row_is_counted_bad_not_guessed(change):
    row = {**ROW, **change}
    assert dsh.decode_record(row) is None
    ev = Evidence(harness="dsh")
    dsh.feed(ev, json.dumps(row).encode())
    assert ev.bad_lines == 1


# -- never raises ------------------------------------------------------------------------------


@given(st.binary(max_size=400))
def test_the_scan_never_raises_on_arbitrary_bytes(data):
    scan = dsh.scan_frames(data)
    assert scan.end <= len(data)


@given(st.lists(st.binary(max_size=2000), min_size=1, max_size=4), st.booleans())
def test_the_scan_agrees_with_the_decoder_on_encoded_frames(chunks, checksum):
    options = {zstd.CompressionParameter.checksum_flag: int(checksum)}
    data = b"".join(zstd.compress(c, options=options) for c in chunks)
    scan = dsh.scan_frames(data)
    assert (scan.end, scan.torn, scan.bad) == (len(data), None, None)
    assert [e - s for s, e in scan.frames] == [
        zstd.get_frame_size(data[s:]) for s, _ in scan.frames
    ]


@given(st.binary(max_size=300), st.integers(min_value=0, max_value=40))
def test_reading_never_raises_on_arbitrary_bytes_after_a_good_frame(tmp_path_factory, data, cut):
    path = tmp_path_factory.mktemp("d") / "session.jsonl.zstd"
    good = session_file("edit_only").read_bytes()
    path.write_bytes(good[: len(good) - cut] + data)
    ev, offset, tail = read_all(path)
    assert offset <= path.stat().st_size
    dsh.feed(ev.copy(), tail)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    st.sampled_from(
        [
            "session",
            "user/message",
            "assistant/message",
            "tool/call",
            "tool/result",
            "turn/end",
            "text-chunks",
            "tool-call-chunks",
            "compaction/end",
        ]
    ),
    JSON,
)
def test_feed_never_raises_on_arbitrary_events(kind, data):
    ev = Evidence(harness="dsh")
    dsh.feed(
        ev,
        json.dumps(
            {"type": kind, "seq": 0, "time": 1, "data": data, "seq0": 0, "time0": 0}
        ).encode(),
    )
    dsh.feed(ev, b"\xff not json")
    assert ev.lines == 2


# -- in the index, the session_gate operation and the Stop hook ---------------------------------


@pytest.fixture
def dsh_config(tmp_path):
    root = tmp_path / "dsh"
    shutil.copytree(DSH_FIXTURES / "zstd", root)
    return GateConfig(
        index_path=tmp_path / "gate.sqlite",
        claude_root=tmp_path / "claude",
        codex_root=tmp_path / "codex",
        dsh_root=root,
    )


def test_the_scan_indexes_dsh_sessions_under_their_root(dsh_config):
    index = GateIndex(dsh_config)
    try:
        report = index.scan()
        assert report.files_seen == report.files_read == 5
        rec = index.find_session("s-verified")
        assert rec is not None
        assert (rec.harness, rec.rung_name, rec.cwd) == ("dsh", "verified", "/work/acme-api")
        assert index.scan().files_read == 0
    finally:
        index.close()


def test_session_gate_finds_a_dsh_session_by_id(dsh_config):
    answer = session_gate(SessionGateIn(session_id="s-edit_only"), config=dsh_config)
    assert answer.result.rung_name == "artifact_changed"
    assert answer.result.indexed is True


def test_a_remote_caller_may_name_a_dsh_file_only_inside_the_dsh_root(dsh_config, tmp_path):
    inside = next(dsh_config.dsh_root.rglob("session.jsonl.zstd"))
    assert checked_transcript(str(inside), dsh_config) == inside.resolve()
    outside = tmp_path / "elsewhere.jsonl.zstd"
    shutil.copy(inside, outside)
    with pytest.raises(TaskError):
        checked_transcript(str(outside), dsh_config)


def stop(session_id: str, **extra: Any) -> io.BytesIO:
    payload = {
        "session_id": session_id,
        "transcript_path": None,
        "cwd": "/work/acme-api",
        "hook_event_name": "Stop",
        **extra,
    }
    return io.BytesIO(json.dumps(payload).encode())


def test_the_stop_hook_through_dsh_codex_layer_owns_the_whole_guard(dsh_config):
    """dsh's Codex layer sends ``transcript_path: null`` and has no stop guard of its own:
    the gate finds the session by id under the dsh root and its own counter stops it after
    three holds."""
    outs = [run("codex", stop("s-edit_only"), config=dsh_config) for _ in range(5)]
    blocks = [json.loads(o) for o in outs[:3]]
    assert all(b["decision"] == "block" for b in blocks)
    assert "rung 2 of 5" in blocks[0]["reason"]
    assert json.loads(outs[3])["systemMessage"].splitlines()[0].endswith("artifact_changed")
    assert outs[4] == ""


def test_the_stop_hook_is_silent_for_a_verified_dsh_session(dsh_config):
    assert run("codex", stop("s-verified"), config=dsh_config) == ""
