"""What the events work costs a call: this tree against another checkout, and tracing on/off.

Two figures, each a ratio of medians measured in the same invocation, rounds alternating:

* ``--before DIR`` (a checkout of the commit before the events work, e.g. ``git worktree add
  /tmp/before main``): one queue cycle (create + claim + checkpoint DONE through
  ``Service.dispatch``, one caller, SQLite) in a child process of each tree, alternating, the
  child's CPU per cycle. Both children run without the ``[otel]`` extra being used (no
  tracer): what every call now does for events (the call note, the status moves, the
  traceparent column) against before. Its sources go first on ``PYTHONPATH``; the same
  installed dependencies serve both.
* in this tree: the same cycle with ``Service(tracer=None)`` against ``tracer=otel_tracer(p)``
  (an OpenTelemetry SDK provider whose processor drops every span, so only the tracing is
  measured, not an exporter): what turning tracing on costs.

    .venv/bin/python benchmarks/events_cost.py --before /tmp/before --rounds 9 --cycles 300
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PACKAGES = ("taskcore", "taskhttp", "taskmcp", "taskcli", "taskboard")

CHILD = r"""
import json, sys, tempfile, time
from taskcore import Service, Tier, Actor
member = Actor(token_id="m", workspace="w", tier=Tier.MEMBER, autonomy=2)
worker = Actor(token_id="k", workspace="w", tier=Tier.AGENT, autonomy=1)
tracer = None
if sys.argv[2] == "otel":
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    class Drop(SpanExporter):
        def export(self, spans): return SpanExportResult.SUCCESS
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    from taskcore.tracing import otel_tracer
    tracer = otel_tracer(provider)
kwargs = {} if tracer is None else {"tracer": tracer}
service = Service.open(tempfile.mkdtemp(dir="/dev/shm" if len(sys.argv) < 4 else None), **kwargs)
def cycle():
    t = service.dispatch(member, "agenttask.create", {"verb": "agent.run"}).json()["taskId"]
    f = service.dispatch(worker, "agenttask.claim", {"taskId": t}).json()["lease"]["fence"]
    service.dispatch(worker, "agenttask.checkpoint", {"taskId": t, "fence": f, "status": "DONE"})
for _ in range(30): cycle()
n = int(sys.argv[1])
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(n): cycle()
print(json.dumps({"cpu_ms": (time.process_time() - cpu) * 1000 / n,
                  "wall_ms": (time.perf_counter() - wall) * 1000 / n}))
service.close()
"""


def _run(root: Path | None, cycles: int, mode: str) -> float:
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(root / "packages" / p / "src") for p in PACKAGES)
    out = subprocess.run(
        [PY, "-c", CHILD, str(cycles), mode], env=env, capture_output=True, text=True, check=True
    )
    return float(json.loads(out.stdout)["cpu_ms"])


def _median(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return f"{statistics.median(values):.3f} ms (p25-p75 {q[0]:.3f}-{q[2]:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the commit to compare with")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--cycles", type=int, default=300)
    args = parser.parse_args()
    if args.before is not None:
        subprocess.run(
            [PY, "-m", "compileall", "-q", "-j", "0",
             *(str(args.before / "packages" / p / "src") for p in PACKAGES)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    series: dict[str, list[float]] = {"before": [], "this": [], "otel": []}
    for _ in range(args.rounds):
        if args.before is not None:
            series["before"].append(_run(args.before, args.cycles, "none"))
        series["this"].append(_run(None, args.cycles, "none"))
        series["otel"].append(_run(None, args.cycles, "otel"))
    print(f"CPU per queue cycle (create + claim + checkpoint DONE), {args.rounds} rounds "
          f"of {args.cycles} cycles, SQLite:")  # fmt: skip
    for name, values in series.items():
        if values:
            print(f"  {name:<7} {_median(values)}")
    this = statistics.median(series["this"])
    if series["before"]:
        print(f"  this / before = {this / statistics.median(series['before']):.3f}")
    print(f"  otel / this   = {statistics.median(series['otel']) / this:.3f}")


if __name__ == "__main__":
    main()
