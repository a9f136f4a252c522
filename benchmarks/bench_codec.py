"""Decode and construct cost of wire values: this tree, and against another checkout.

    .venv/bin/python benchmarks/bench_codec.py [--rounds 7] [--seconds 0.3] [--before DIR]

Cases (each a rate, calls per second, of one value):

* ``decode <type>``: ``Codec.decode(cls, raw)`` of the value's compact bytes (bounded
  parse, strict structure, every wire rule), beside ``json.loads`` of the same bytes;
* ``construct <type>``: the value built again through its constructors, nested values
  first (what a program or the service does when it makes one), beside the same
  construction with attrs validators switched off (``attrs.validators.disabled()``): the
  ratio is what checking the rule table at construction costs.

The values: the typical signed observation of ``bench_observation.py`` (8 criteria, 3
findings and 2 evidence digests each), the golden ``task_mixed`` task and a claim request.

In context: ``queue cycle CPU``, the CPU time (not wall: the commits wait on fsync) of one
``agenttask.create`` + ``claimNext`` + ``checkpoint(DONE)`` through ``Service.dispatch`` on a
temporary journal (``bench_queue.AgentTask``), where requests are decoded and views built,
beside the same cycles with validators off (blocks alternating on one journal). It includes
SQLite's and the kernel's work for the commits, so it is noisy on a busy machine.

With ``--before DIR`` (a checkout of another commit, e.g. ``git archive main | tar -x -C
DIR``) every round runs the cases once in a child process on that tree's taskcore and once on
this tree's, alternating, and the table adds the ratio this/before of the medians: one
invocation measures a change before and after on the same machine at the same time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


Batch = Callable[[int], object]
"""A case: ``run(n)`` makes ``n`` calls."""


def rate(run: Batch, seconds: float) -> float:
    """Calls per second of ``run`` over at least ``seconds`` of wall time."""
    calls, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        run(20)
        calls += 20
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - start)


def builder(value: Any) -> Callable[[], Any] | None:
    """A function that builds ``value`` again through its constructors, or ``None``.

    Nested attrs values are built first, as a program builds them; leaves (strings, numbers,
    enum members, tuples of leaves) are passed as they are, so the time is the constructors'.
    ``None`` means ``value`` is such a leaf.
    """
    import attrs

    if attrs.has(type(value)):
        cls = type(value)
        fixed: dict[str, Any] = {}
        built: dict[str, Callable[[], Any]] = {}
        for field in attrs.fields(cls):
            inner = getattr(value, field.name)
            make = builder(inner)
            if make is None:
                fixed[field.alias] = inner
            else:
                built[field.alias] = make
        return lambda: cls(**fixed, **{alias: make() for alias, make in built.items()})
    if type(value) is tuple:
        makers = [builder(item) for item in value]
        if all(make is None for make in makers):
            return None
        items = [(item, make) for item, make in zip(value, makers, strict=True)]
        return lambda: tuple(item if make is None else make() for item, make in items)
    return None


def cases() -> dict[str, Batch]:
    """Every timed case, built from this process's taskcore (whichever tree it comes from)."""
    import attrs
    from taskcore.codec import Codec
    from taskcore.contract import TaskClaimRequest, TaskResultAssertion, WorkflowTask
    from taskcore.limits import ASSERTION_MAX_BYTES

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_observation import typical_observation

    codec = Codec()
    task_doc = json.loads((ROOT / "golden" / "digests" / "task_mixed.json").read_text())["input"]
    task = codec.decode(WorkflowTask, task_doc)
    claim_doc = json.loads((ROOT / "golden" / "digests" / "request_claim.json").read_text())
    claim = codec.decode(TaskClaimRequest, claim_doc["input"])
    values: dict[str, tuple[type[Any], Any]] = {
        "assertion": (TaskResultAssertion, typical_observation()),
        "task": (WorkflowTask, task),
        "claim": (TaskClaimRequest, claim),
    }
    out: dict[str, Batch] = {}
    for name, (cls, value) in values.items():
        raw = codec.dumps(value)

        def decode(n: int, cls: type[Any] = cls, raw: bytes = raw) -> object:
            for _ in range(n):
                decoded = codec.decode(cls, raw, max_bytes=ASSERTION_MAX_BYTES)
            return decoded

        def loads(n: int, raw: bytes = raw) -> object:
            for _ in range(n):
                tree = json.loads(raw)
            return tree

        make = builder(value)
        assert make is not None

        def construct(n: int, make: Callable[[], Any] = make) -> object:
            for _ in range(n):
                built = make()
            return built

        def unchecked(n: int, make: Callable[[], Any] = make) -> object:
            with attrs.validators.disabled():
                for _ in range(n):
                    built = make()
            return built

        assert decode(1) == value
        assert construct(1) == value
        assert unchecked(1) == value
        out[f"decode {name}"] = decode
        out[f"json.loads {name}"] = loads
        out[f"construct {name}"] = construct
        out[f"construct {name}, validators off"] = unchecked
    return out


def queue_cpu(cycles: int) -> dict[str, float]:
    """Queue cycles per CPU second through ``Service.dispatch``, validators on and off.

    Blocks of cycles alternate between the two on one journal, after a warm-up, so both see
    the same file sizes and caches.
    """
    import attrs

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_queue import AgentTask

    queue = AgentTask()
    spent = {True: 0.0, False: 0.0}
    try:
        for _ in range(20):
            queue.cycle()
        block = max(1, cycles // 10)
        for _ in range(10):
            for on in (True, False):
                attrs.validators.set_disabled(not on)
                started = time.process_time()
                for _ in range(block):
                    queue.cycle()
                spent[on] += time.process_time() - started
    finally:
        attrs.validators.set_disabled(False)
        queue.close()
    return {
        "queue cycle CPU": 10 * block / spent[True],
        "queue cycle CPU, validators off": 10 * block / spent[False],
    }


def measure(seconds: float) -> dict[str, float]:
    """One round: every case once."""
    got = {name: rate(fn, seconds) for name, fn in cases().items()}
    got.update(queue_cpu(max(20, int(seconds * 300))))
    return got


def child(tree: Path, seconds: float) -> dict[str, float]:
    """One round in a child process whose taskcore is ``tree``'s."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree / "packages" / "taskcore" / "src")
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", "--seconds", str(seconds)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {k: float(v) for k, v in json.loads(out).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="wall time per case")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (medians count)")
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.seconds)))
        return

    trees = {"this": ROOT} if args.before is None else {"before": args.before, "this": ROOT}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            rounds[name].append(child(tree, args.seconds))
    median = {
        name: {case: statistics.median(r[case] for r in runs) for case in runs[0]}
        for name, runs in rounds.items()
    }
    print(f"machine: {platform.machine()} cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f}")
    print(f"python: {platform.python_implementation()} {platform.python_version()}")
    print(f"rounds: {args.rounds}, {args.seconds} s per case; medians of calls per second")
    this = median["this"]
    header = "| case | this tree (us each) | baseline in the same run | ratio |"
    if "before" in median:
        header += " before (us each) | this/before time |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for case, per_second in this.items():
        if case.endswith("validators off") or case.startswith("json.loads"):
            continue  # baselines, shown beside their case
        kind, name = case.split(" ", 1)
        base_case = f"json.loads {name}" if kind == "decode" else f"{case}, validators off"
        base = this[base_case]
        row = (
            f"| {case} | {1e6 / per_second:.1f} | {base_case}: {1e6 / base:.1f} "
            f"| {base / per_second:.2f}x |"
        )
        if "before" in median:
            before = median["before"][case]
            row += f" {1e6 / before:.1f} | {before / per_second:.2f}x |"
        print(row)


if __name__ == "__main__":
    main()
