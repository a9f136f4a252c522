"""The rows of issue 30's goals in ``run_all.py``'s table: workers and PostgreSQL.

Each runs its benchmark's ``main`` (``bench_workers.py``, ``bench_postgres.py``), whose own
output is printed as it goes, and turns its result into one row per goal.
"""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]


def workers(rounds: int, cycles: int) -> list[Row]:
    """8 HTTP clients on ``serve --workers 2`` against ``--workers 1`` (bench_workers.py)."""
    import bench_workers

    got = bench_workers.main(["--rounds", str(rounds), "--cycles", str(cycles)])
    ratio = got["ratio"]
    return [
        {
            "figure": f"serve --workers 2, 8 HTTP clients: {got['many']:.0f} cycles/s",
            "baseline": f"--workers 1: {got['one']:.0f} cycles/s",
            "ratio": f"{ratio:.2f}x",
            "goal": ">= 1.4x (2 cores, shared with the clients)",
            "meets": "yes" if ratio >= bench_workers.GOAL else "no",
        }
    ]


def postgres(rounds: int, cycles: int) -> list[Row]:
    """agent-task on PostgreSQL against Procrastinate, 1 and 8 workers (bench_postgres.py)."""
    import bench_postgres

    got = {
        str(r["case"]): r
        for r in bench_postgres.main(
            ["--rounds", str(rounds), "--cycles", str(cycles), "--replicas", ""]
        )
    }
    rows: list[Row] = []
    for n, goal in ((1, 0.8), (8, 1.0)):
        suffix = f"{n} worker{'s' if n > 1 else ''}"
        ours = got[f"agent-task on PostgreSQL, {suffix}"]
        theirs = got[f"Procrastinate, {suffix}"]
        ratio = float(ours["vs_procrastinate"])  # type: ignore[arg-type]
        rows.append(
            {
                "figure": f"PostgreSQL queue cycle, {suffix}: "
                f"{float(ours['cycles_per_s']):.0f} cycles/s",  # type: ignore[arg-type]
                "baseline": f"Procrastinate: {float(theirs['cycles_per_s']):.0f} cycles/s",  # type: ignore[arg-type]
                "ratio": f"{ratio:.2f}x",
                "goal": f">= {goal}x",
                "meets": "yes" if ratio >= goal else "no",
            }
        )
    return rows
