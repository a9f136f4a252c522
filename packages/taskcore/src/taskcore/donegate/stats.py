"""How often the gate would fire: the seed's section 1 tables, from the local index.

The denominator is a session that claimed something (rung 1 or higher); *below* is rung 1 or
2. Every row carries its n; a row under the ``GATE_MIN_N`` floor is flagged, never hidden, and
its rate is printed as a count ("19 of 38"), not a percentage.

>>> from taskcore.store.gate_api import GateSessionRecord
>>> def s(key, rung, repo="/r", harness="codex", sub=False):
...     return GateSessionRecord(session_key=key, harness=harness, session_id=key,
...         parent_key="", subagent=sub, path="", cwd=repo, repository=repo, first_ms=0,
...         last_ms=0, rung=rung, rung_name="", prompts=1, updated_at_ms=0)
>>> rows = firing_rates([s("a", 2), s("b", 3), s("c", 0)], by="adapter")
>>> (rows[0].group, rows[0].n, rows[0].below, rows[0].pct)
('codex', 2, 1, 50.0)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import attrs

from taskcore.limits import GATE_MIN_N
from taskcore.store.gate_api import GateSessionRecord

__all__ = ["StatsRow", "firing_rates", "render_table"]


@attrs.frozen(kw_only=True)
class StatsRow:
    """One group of the firing-rate table."""

    group: str
    n: int
    done_claimed: int
    artifact_changed: int
    below: int
    pct: float | None
    under_floor: bool

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for ``--json``."""
        return attrs.asdict(self)


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home) :]
    return path or "(no directory)"


def _group(rec: GateSessionRecord, by: str) -> str:
    if by == "adapter":
        return rec.harness
    if by == "repository":
        return _home(rec.repository)
    return "subagent" if rec.subagent else "main"


def firing_rates(
    sessions: Iterable[GateSessionRecord], *, by: str, min_n: int = GATE_MIN_N
) -> list[StatsRow]:
    """Group sessions that claimed something ``by`` adapter, repository or kind."""
    groups: dict[str, list[int]] = {}
    for rec in sessions:
        if rec.rung < 1:
            continue
        g = groups.setdefault(_group(rec, by), [0, 0, 0])
        g[0] += 1
        g[1] += rec.rung == 1
        g[2] += rec.rung == 2
    rows = []
    for name, (n, one, two) in groups.items():
        below = one + two
        rows.append(
            StatsRow(
                group=name,
                n=n,
                done_claimed=one,
                artifact_changed=two,
                below=below,
                pct=round(100.0 * below / n, 1) if n else None,
                under_floor=n < min_n,
            )
        )
    rows.sort(key=lambda r: (-r.n, r.group))
    return rows


def render_table(rows: list[StatsRow], title: str) -> str:
    """A plain-text table; rows under the floor show a count instead of a rate."""
    width = max([len(title), *(len(r.group) for r in rows)]) if rows else len(title)
    out = [f"{title:<{width}}  {'n':>6}  {'claimed':>7}  {'changed':>7}  {'below':>5}  rate"]
    for r in rows:
        rate = f"{r.below} of {r.n} (n<{GATE_MIN_N})" if r.under_floor else f"{r.pct:.1f}%"
        out.append(
            f"{r.group:<{width}}  {r.n:>6}  {r.done_claimed:>7}  "
            f"{r.artifact_changed:>7}  {r.below:>5}  {rate}"
        )
    if not rows:
        out.append("(no session in the index claimed anything yet)")
    return "\n".join(out)
