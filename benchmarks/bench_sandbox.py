"""What the collector's sandbox costs per run, beside a direct run in the same process.

    .venv/bin/python benchmarks/bench_sandbox.py [--runs 30]

For each sandbox mode this machine offers, ``run_recipe`` runs ``/bin/true`` in an empty
snapshot directory (the whole runtime path: plan, argv, start, both pipes, reap, end-of-run
checks, cgroup leaf made and removed where limits use one). The baseline is
``subprocess.run(["/bin/true"])``, interleaved with the sandboxed runs in the same loop, so
machine load affects both alike. Medians in milliseconds and their ratio to the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import attrs
from taskcore.collector.runtime import run_recipe
from taskcore.collector.sandbox import bwrap_available, cgroup_v1_available, netns_available
from taskcore.contract import CommandRecipe, IsolationPolicy, NetworkAccess, SandboxMode
from taskcore.contract.collector import DEFAULT_ISOLATION

RECIPE = CommandRecipe(
    argv=("/bin/true",),
    working_directory=".",
    environment_allowlist=(),
    timeout_ms=30_000,
    output_limit_bytes=1024,
)


def _cases() -> list[tuple[str, SandboxMode, IsolationPolicy | None]]:
    out: list[tuple[str, SandboxMode, IsolationPolicy | None]] = [("none", SandboxMode.NONE, None)]
    if netns_available():
        out.append(("netns", SandboxMode.NETNS, None))
    if bwrap_available():
        out.append(("bwrap", SandboxMode.BWRAP, None))
        limited = attrs.evolve(
            DEFAULT_ISOLATION,
            network=NetworkAccess.NONE,
            memory_limit_bytes=1 << 30,
            process_limit=256,
        )
        label = "bwrap + limits (cgroup v1)" if cgroup_v1_available() else "bwrap + limits (rlimit)"
        out.append((label, SandboxMode.BWRAP, limited))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    cases = _cases()
    times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    direct: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "snapshot"
        snapshot.mkdir()
        for _ in range(args.runs):
            started = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            direct.append((time.perf_counter() - started) * 1000)
            for label, mode, policy in cases:
                started = time.perf_counter()
                result = run_recipe(RECIPE, snapshot, env_source={}, sandbox=mode, isolation=policy)
                times[label].append((time.perf_counter() - started) * 1000)
                assert result.outcome.value == "passed", (label, result)
    base = statistics.median(direct)
    print(f"runs: {args.runs}; direct /bin/true: {base:.1f} ms (median)")
    print("| sandbox | median ms | p90 ms | / direct |")
    print("|---|---|---|---|")
    for label, _, _ in cases:
        values = sorted(times[label])
        p90 = values[int(0.9 * (len(values) - 1))]
        med = statistics.median(values)
        print(f"| {label} | {med:.1f} | {p90:.1f} | {med / base:.1f}x |")


if __name__ == "__main__":
    main()
