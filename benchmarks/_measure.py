"""What ``run_all.py`` and its sections share: the paths, the timing helpers and the table.

``AGENT_TASK`` is the command the hook rows time; ``run_all.py --agent-task`` sets it in
``_hook_rows`` (where it is read when a row runs).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
AGENT_TASK = str(BIN / "agent-task")
PY = sys.executable
FIXTURES = ROOT / "tests" / "taskcore" / "donegate" / "fixtures"

Row = dict[str, Any]


# -- measuring ------------------------------------------------------------------------------


def interleaved(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run every case once per round, in order; each call returns its own measurement."""
    for fn in cases.values():  # warm-up, not counted
        fn()
    out: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            out[name].append(fn())
    return out


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, p25, p75)."""
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return statistics.median(values), q[0], q[2]


def process_ms(
    argv: list[str],
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    *,
    expect: Callable[[bytes], bool],
    what: str,
) -> float:
    """Wall time of one process, start to exit, in ms; its output must be what was timed.

    ``expect`` checks the process's stdout (``what`` says what it must be): a timed command
    that exits non-zero or answers something else stops the run, so no row times a hook
    that did not do the thing its row names.
    """
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited {done.returncode}: {done.stderr[-500:]!r}")
    if not expect(done.stdout):
        raise RuntimeError(f"{argv[:3]} did not answer {what}: {done.stdout[:300]!r}")
    return elapsed


def silent(out: bytes) -> bool:
    """Nothing on stdout (a hook that lets the agent stop)."""
    return not out.strip()


def blocked(out: bytes) -> bool:
    """A Stop hook's block on stdout (``taskcore.donegate.light.hook_output``'s ``block``).

    Codex: ``{"decision": "block", ...}``; Claude Code: the receipt as the event's
    ``additionalContext``. Not a receipt (``systemMessage``), not silence.
    """
    try:
        answer = json.loads(out)
    except ValueError:
        return False
    if not isinstance(answer, dict):
        return False
    specific = answer.get("hookSpecificOutput")
    return answer.get("decision") == "block" or (
        isinstance(specific, dict) and bool(specific.get("additionalContext"))
    )


def row(
    figure: str,
    values: list[float],
    baseline: str,
    base_values: list[float],
    goal: str,
    limit: float,
    *,
    unit: str = "ms",
    higher_is_better: bool = False,
) -> Row:
    m, lo, hi = spread(values)
    bm, blo, bhi = spread(base_values)
    ratio = m / bm
    meets = ratio >= limit if higher_is_better else ratio <= limit
    return {
        "figure": f"{figure}: {m:.3g} {unit} [{lo:.3g}-{hi:.3g}]",
        "baseline": f"{baseline}: {bm:.3g} {unit} [{blo:.3g}-{bhi:.3g}]",
        "ratio": f"{ratio:.2f}x",
        "goal": goal,
        "meets": "yes" if meets else "no",
    }


# -- the table ------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    heads = ["figure", "baseline", "ratio", "goal", "meets"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(str(r[h]) for h in heads) + " |" for r in rows]
    return "\n".join(lines)
