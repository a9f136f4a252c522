r"""The dsh session reader (``<root>/--<normalized-cwd>--/<encoded-id>/session.jsonl.zstd``).

dsh (``@deepseek-ai/dsh``) keeps each session as one append-only logical JSONL log through its
``@deepseek-ai/dsh-session-persistence-jsonl`` plugin. By default the file is a standard
concatenation of independent, checksummed Zstandard frames: one frame holding only the header
line, then one frame per durable append batch. With ``compression: 'none'`` the same lines are
plain ``session.jsonl``. This module turns either into the gate's evidence.

The physical layer (:func:`scan_frames`, :func:`iter_lines`):

* frames are found structurally (RFC 8878 frame and block headers), without decompressing;
  skippable frames are stepped over; a frame cut short by the end of the file is *torn* (a
  write in progress or a crash): its complete lines are read for the current answer but it is
  never stored as read, the way a JSONL reader treats a trailing line without its newline;
* every complete frame is decompressed on its own (its checksum verified) with a bound on the
  decompressed size; a frame that does not decode, or bytes that are not a frame, end the read
  there (counted, never raised).

The logical layer (:func:`decode_record`, :func:`feed`): the first line is the header
(``{"type": "session", "version": 0, "id", "cwd", "parentSession"?, "origin"?}``); every other
line is a session event (``{"type", "seq", "time", "data"}``) or a *packed chunk row*
(``text-chunks``, ``reasoning-chunks``, ``tool-call-chunks``: a run of >= 3 consecutive
``assistant/chunk`` deltas as ``seq0``/``time0``/``dt`` and the member texts), expanded back to
its events exactly as ``@deepseek-ai/dsh-session``'s ``decodeStorageRecord`` does (a malformed
row is counted bad, not guessed at). What the gate reads from the events:

* ``user/message`` with ``source.kind == "user"``: a prompt (``plugin`` sources are injected
  context: notices, a Stop hook's steering, skill text);
* ``assistant/message``: the agent's text (``interrupted`` prefixes included);
* ``tool/call`` + ``tool/result`` by ``callId``: ``bash`` (``command``; the result text ends in
  ``[exit code: N]`` when N is not 0, ``[timed out after ...]`` or ``[killed by signal: ...]``
  when it did not finish, ``started background job <id>`` for ``run_in_background``),
  ``write`` / ``edit`` (``file_path``) and ``str_replace_editor`` (``create``, ``str_replace``,
  ``insert``, ``undo_edit`` on ``path``); a result with ``isError`` or an ``error`` never
  changed anything;
* ``turn/end`` with an ``aborted``, ``interrupted`` or ``error`` reason: what was still
  running is interrupted.

``taskcore.donegate.index`` reads dsh files through :func:`iter_lines`, storing the offset of the
last complete frame, so a grown file is read from there. This module imports the Zstandard
decoder only when a compressed file is read (the Stop hook of the other harnesses never
loads it).

>>> from taskcore.donegate.evidence import Evidence
>>> ev = Evidence(harness="dsh")
>>> feed(ev, b'{"type":"session","version":0,"id":"s1","cwd":"/w","createdAt":1}')
>>> feed(ev, b'{"type":"tool/call","seq":0,"time":5,"data":{"turn":0,"step":0,'
...          b'"callId":"c1","name":"bash","arguments":"{\\"command\\":\\"pytest -q\\"}"}}')
>>> feed(ev, b'{"type":"tool/result","seq":1,"time":6,"data":{"turn":0,"step":0,"message":'
...          b'{"role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":'
...          b'[{"type":"text","text":"1 failed\\n[exit code: 1]"}]}]}}}')
>>> ev.session_id, [(c.status, c.exit) for c in ev.checks]
('s1', [('failed', 1)])
"""

from __future__ import annotations

import json
import os
import re

from taskcore.donegate.evidence import Evidence
from taskcore.limits import GATE_DSH_FRAME_MAX_BYTES, GATE_LINE_MAX_BYTES

TYPE_CHECKING = False  # not typing's: the Stop hook's fast path reads transcripts without it
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Final

__all__ = [
    "DSH",
    "FrameScan",
    "decode_record",
    "feed",
    "iter_lines",
    "scan_frames",
]

DSH: Final = "dsh"

_ZSTD_MAGIC: Final = 0xFD2FB528
_SKIPPABLE_MASK: Final = 0xFFFFFFF0
_SKIPPABLE_MAGIC: Final = 0x184D2A50
_PACKED: Final = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
_MAX_SAFE: Final = 2**53 - 1
_EXIT = re.compile(r"\[exit code: (-?\d+)\]\s*$")
_NOT_FINISHED = re.compile(r"\[(?:timed out after [^\]]*|killed by signal: [^\]]*)\]\s*$")
_BACKGROUND = re.compile(r"^started background job (\S+)")
_JOB_DONE = re.compile(r"\bexit code: (-?\d+)")
_EDIT_COMMANDS: Final = frozenset({"create", "str_replace", "insert", "undo_edit"})
_INTERRUPTING: Final = frozenset({"aborted", "interrupted", "error"})


class FrameScan:
    """Where the complete frames of a byte string are, and what follows them.

    ``frames`` are ``(start, end)`` of Zstandard frames (skippable frames are left out);
    ``end`` is where structurally complete data ends; ``torn`` is the start of a final frame
    the data cuts short; ``bad`` is the offset of bytes that are not a frame (the scan stops).
    """

    __slots__ = ("bad", "end", "frames", "torn")

    def __init__(self) -> None:
        self.frames: list[tuple[int, int]] = []
        self.end = 0
        self.torn: int | None = None
        self.bad: int | None = None

    def __repr__(self) -> str:
        return f"FrameScan(frames={self.frames}, end={self.end}, torn={self.torn}, bad={self.bad})"


def _frame_end(data: bytes | memoryview, start: int) -> int | None:
    """End offset of the Zstandard frame at ``start``; ``None`` if the data stops inside it.

    Raises ``ValueError`` for a header or block that RFC 8878 does not allow.
    """
    n = len(data)
    pos = start + 4
    if pos >= n:
        return None
    fhd = data[pos]
    pos += 1
    if fhd & 0x08:
        raise ValueError("reserved bit set in the frame header")
    single_segment = bool(fhd & 0x20)
    fcs_flag = fhd >> 6
    did_size = (0, 1, 2, 4)[fhd & 0x03]
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    pos += (0 if single_segment else 1) + did_size + fcs_size
    while True:
        if pos + 3 > n:
            return None
        header = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16)
        pos += 3
        last, kind, size = header & 1, (header >> 1) & 3, header >> 3
        if kind == 3:
            raise ValueError("reserved block type")
        pos += 1 if kind == 1 else size
        if pos > n:
            return None
        if last:
            break
    if fhd & 0x04:
        pos += 4
    return pos if pos <= n else None


def scan_frames(data: bytes | memoryview, offset: int = 0) -> FrameScan:
    r"""Find the frames in ``data[offset:]`` without decompressing anything.

    >>> scan_frames(b"").frames
    []
    >>> s = scan_frames(b"(\xb5/\xfd\x20\x02\x11\x00\x00hi")   # one raw block "hi"
    >>> s.frames, s.end, s.torn
    ([(0, 11)], 11, None)
    >>> scan_frames(b"(\xb5/\xfd\x20\x02\x11\x00").torn
    0
    >>> scan_frames(b"not a frame").bad
    0
    """
    scan = FrameScan()
    pos = offset
    n = len(data)
    scan.end = pos
    while pos < n:
        if pos + 4 > n:
            scan.torn = pos
            break
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if magic & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
            if pos + 8 > n:
                scan.torn = pos
                break
            end = pos + 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
            if end > n:
                scan.torn = pos
                break
            pos = scan.end = end
            continue
        if magic != _ZSTD_MAGIC:
            scan.bad = pos
            break
        try:
            end_or_none = _frame_end(data, pos)
        except ValueError:
            scan.bad = pos
            break
        if end_or_none is None:
            scan.torn = pos
            break
        scan.frames.append((pos, end_or_none))
        pos = scan.end = end_or_none
    return scan


def _zstd() -> Any:
    """The Zstandard module: ``compression.zstd`` (3.14+) or its backport."""
    try:
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from backports import zstd  # type: ignore[no-redef,unused-ignore]
    return zstd


def _decompress(frame: bytes, *, complete: bool) -> bytes | None:
    """One frame's text (``None``: corrupt or over the bound); a torn frame gives its prefix."""
    zstd = _zstd()
    decoder = zstd.ZstdDecompressor()
    try:
        out: bytes = decoder.decompress(frame, max_length=GATE_DSH_FRAME_MAX_BYTES + 1)
    except zstd.ZstdError:
        return None
    if len(out) > GATE_DSH_FRAME_MAX_BYTES:
        return None
    if complete and not decoder.eof:
        return None
    return out


def _split(text: bytes) -> Iterator[bytes]:
    """Non-blank lines of ``text`` (an over-long line is yielded as ``b""``: skipped)."""
    start = 0
    while start < len(text):
        nl = text.find(b"\n", start)
        end = len(text) if nl < 0 else nl
        line = text[start:end]
        if line.strip():
            yield line if len(line) <= GATE_LINE_MAX_BYTES else b""
        start = end + 1


def iter_lines(path: str | os.PathLike[str], offset: int, size: int) -> Iterator[tuple[bytes, int]]:
    """Yield ``(logical line, end)`` from ``offset`` to ``size`` of a dsh session file.

    For ``.jsonl.zstd`` each complete frame's lines are yielded with ``end`` 0 except the
    frame's last, which carries the frame's end offset (the only offsets that may be stored as
    read). A torn final frame's complete lines, or raw text after the last newline, come last
    with ``end`` -1 (read for the answer, never stored). Bytes that are not a frame, or a frame
    that does not decode, end the read; the item ``(b"", -2)`` says so. Plain ``.jsonl`` files
    are read line by line with each line's end offset.
    """
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(max(0, size - offset))
    if not os.fspath(path).endswith(".zstd"):
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                if data[start:].strip():
                    yield data[start:], -1
                return
            line = data[start:nl]
            yield (line if len(line) <= GATE_LINE_MAX_BYTES else b""), offset + nl + 1
            start = nl + 1
    scan = scan_frames(data)
    for start, end in scan.frames:
        text = _decompress(data[start:end], complete=True)
        if text is None:
            yield b"", -2
            return
        lines = list(_split(text))
        for i, line in enumerate(lines):
            yield line, (offset + end if i == len(lines) - 1 else 0)
        if not lines:
            yield b"\n", offset + end
    if scan.bad is not None:
        yield b"", -2
        return
    if scan.torn is not None:
        text = _decompress(data[scan.torn :], complete=False) or b""
        complete, _, _partial = text.rpartition(b"\n")
        for line in _split(complete):
            if line.strip():
                yield line, -1


# -- the logical layer --------------------------------------------------------------------------


def _safe_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_SAFE


def _row_members(row: dict[str, Any], tag: str) -> list[str] | None:
    """The member payloads of a packed row after the same checks dsh makes (``None``: bad)."""
    if set(row) != {"type", "seq0", "time0", "data"}:
        return None
    if not (_safe_int(row["seq0"]) and row["seq0"] >= 0 and _safe_int(row["time0"])):
        return None
    data = row["data"]
    if not isinstance(data, dict):
        return None
    if tag == "tool-call-chunks":
        keys = {"turn", "step", "index", "id", "dt", "args"}
        if set(data) not in (keys, keys | {"name"}) or not isinstance(data["id"], str):
            return None
        if "name" in data and not isinstance(data["name"], str):
            return None
        payload_key = "args"
    else:
        if set(data) != {"turn", "step", "index", "dt", "texts"}:
            return None
        payload_key = "texts"
    if not all(isinstance(data[k], int | float) for k in ("turn", "step", "index")):
        return None
    payload, dt = data[payload_key], data["dt"]
    if not isinstance(payload, list) or not payload or not all(isinstance(p, str) for p in payload):
        return None
    if not isinstance(dt, list) or not all(_safe_int(g) for g in dt) or len(dt) != len(payload) - 1:
        return None
    return payload


def decode_record(value: Any) -> list[Any] | None:
    """One stored line's events: a packed chunk row expanded, anything else as itself.

    ``None`` for a row-tagged value that fails dsh's own validation (corrupt storage).

    >>> [e["seq"] for e in decode_record({"type": "text-chunks", "seq0": 4, "time0": 10,
    ...     "data": {"turn": 0, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"]}})]
    [4, 5, 6]
    >>> decode_record({"type": "text-chunks", "seq0": 4, "time0": 10, "data": {}}) is None
    True
    """
    if not isinstance(value, dict) or value.get("type") not in _PACKED:
        return [value]
    tag = value["type"]
    members = _row_members(value, tag)
    if members is None:
        return None
    data = value["data"]
    events: list[Any] = []
    time = value["time0"]
    for k, member in enumerate(members):
        if k > 0:
            time += data["dt"][k - 1]
        chunk: dict[str, Any]
        if tag == "tool-call-chunks":
            chunk = {"type": "tool-call-delta", "index": data["index"], "id": data["id"]}
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = member
        else:
            kind = "text-delta" if tag == "text-chunks" else "reasoning-delta"
            chunk = {"type": kind, "index": data["index"], "text": member}
        events.append(
            {
                "type": "assistant/chunk",
                "seq": value["seq0"] + k,
                "time": time,
                "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk},
            }
        )
    return events


def feed(ev: Evidence, line: bytes) -> None:
    """Read one logical dsh line (several, newline-separated, are read in turn); never raises."""
    if b"\n" in line:
        for part in line.split(b"\n"):
            if part.strip():
                feed(ev, part)
        return
    ev.lines += 1
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        ev.bad_lines += 1
        return
    events = decode_record(value)
    if events is None:
        ev.bad_lines += 1
        return
    for event in events:
        if not isinstance(event, dict):
            ev.bad_lines += 1
            continue
        try:
            _event(ev, event)
        except (TypeError, KeyError, AttributeError, ValueError, IndexError):
            ev.bad_lines += 1


def _args(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, str):
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _texts(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _header(ev: Evidence, rec: dict[str, Any]) -> None:
    if isinstance(rec.get("id"), str) and not ev.session_id:
        ev.session_id = rec["id"][:128]
    if isinstance(rec.get("cwd"), str) and not ev.cwd:
        ev.cwd = rec["cwd"][:4096]
    if rec.get("origin") == "subagent" or isinstance(rec.get("parentSession"), str):
        ev.subagent = rec.get("origin") == "subagent"
        if isinstance(rec.get("parentSession"), str):
            ev.parent_session_id = rec["parentSession"][:128]
    ev.next_pos(rec["createdAt"] if _safe_int(rec.get("createdAt")) else None)


def _event(ev: Evidence, rec: dict[str, Any]) -> None:
    kind = rec.get("type")
    if kind == "session":
        _header(ev, rec)
        return
    data = rec.get("data")
    if not isinstance(data, dict):
        return
    ts = rec["time"] if _safe_int(rec.get("time")) else None
    if kind == "user/message":
        source = data.get("source")
        text = _texts(data.get("content"))
        if isinstance(source, dict) and source.get("kind") == "user" and text.strip():
            ev.next_pos(ts)
            ev.prompt(text)
    elif kind == "assistant/message":
        message = data.get("message")
        if isinstance(message, dict):
            text = _texts(message.get("content"))
            if text:
                ev.assistant_text(text, ev.next_pos(ts))
    elif kind == "tool/call":
        _call(ev, data, ts)
    elif kind == "tool/result":
        _result(ev, data, ts)
    elif kind == "turn/end":
        reason = data.get("reason")
        if isinstance(reason, dict) and reason.get("kind") in _INTERRUPTING:
            ev.interrupt_pending()
    elif kind == "compaction/end":
        ev.compactions += 1


def _call(ev: Evidence, data: dict[str, Any], ts: int | None) -> None:
    call_id, name = data.get("callId"), data.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        return
    args = _args(data.get("arguments"))
    if name == "bash" and isinstance(args.get("command"), str):
        ev.issue_shell(call_id, args["command"], ev.next_pos(ts))
    elif name in ("write", "edit") and isinstance(args.get("file_path"), str):
        ev.issue_edit(call_id, [args["file_path"]], ev.next_pos(ts))
    elif (
        name == "str_replace_editor"
        and args.get("command") in _EDIT_COMMANDS
        and isinstance(args.get("path"), str)
    ):
        ev.issue_edit(call_id, [args["path"]], ev.next_pos(ts))
    elif isinstance(args.get("jobId"), str) and f"dsh-job:{args['jobId']}" in ev.background:
        ev.pending[call_id] = {"t": "poll", "job": args["jobId"]}


def _result(ev: Evidence, data: dict[str, Any], ts: int | None) -> None:
    message = data.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return
    for block in message["content"]:
        if not isinstance(block, dict) or block.get("type") != "tool-result":
            continue
        ref = block.get("toolCallId")
        if not isinstance(ref, str) or ref not in ev.pending:
            continue
        failed = block.get("isError") is True or isinstance(data.get("error"), dict)
        text = _texts(block.get("content"))
        entry = ev.pending[ref]
        ev.next_pos(ts)
        if entry.get("t") == "ed":
            ev.resolve_edit(ref, ok=not failed)
        elif entry.get("t") == "poll":
            del ev.pending[ref]
            done = _JOB_DONE.search(text[-2000:])
            if done and not failed:
                ev.resolve_background(f"dsh-job:{entry['job']}", exit_code=int(done.group(1)))
        elif failed or _NOT_FINISHED.search(text[-400:]):
            ev.resolve_shell(ref, interrupted=True)
        elif (job := _BACKGROUND.match(text)) is not None:
            ev.resolve_shell(ref, background=f"dsh-job:{job.group(1)}")
        else:
            code = _EXIT.search(text[-400:])
            ev.resolve_shell(ref, exit_code=int(code.group(1)) if code else 0)
