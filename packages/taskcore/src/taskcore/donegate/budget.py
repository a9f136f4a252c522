"""The re-entry budget: three per session and user prompt, then the gate steps aside.

The decision is a table of cases, not scattered conditions:

=================  =================  ======================================================
below the line?    stop_hook_active   budget
=================  =================  ======================================================
no                 any                ``silent``: allow the stop, print nothing
yes                true               ``silent``: the harness is already continuing because
                                      of a stop hook; honour its guard and allow the stop
yes                false              used < 3: ``block`` (re-enter with the receipt, used+1)
yes                false              used = 3, receipt not shown: ``receipt``: allow the
                                      stop and print the receipt once
yes                false              used = 3, receipt shown: ``silent``
=================  =================  ======================================================

>>> decide(below_line=True, used=0, shown=False, stop_hook_active=False)
Decision(action='block', used=1, shown=False)
>>> decide(below_line=True, used=3, shown=False, stop_hook_active=False)
Decision(action='receipt', used=3, shown=True)
>>> decide(below_line=True, used=1, shown=False, stop_hook_active=True)
Decision(action='silent', used=1, shown=False)
"""

from __future__ import annotations

import collections

from taskcore.limits import DONE_GATE_BUDGET

__all__ = ["Decision", "decide"]


class Decision(collections.namedtuple("Decision", ("action", "used", "shown"))):
    """What the hook does (``silent``, ``block`` or ``receipt``), and the budget afterwards.

    A named tuple, not an attrs class: the Stop hook's fast path uses this table without
    loading attrs.
    """

    __slots__ = ()
    action: str
    used: int
    shown: bool


def decide(
    *,
    below_line: bool,
    used: int,
    shown: bool,
    stop_hook_active: bool,
    budget: int = DONE_GATE_BUDGET,
) -> Decision:
    """Apply the table above."""
    if not below_line or stop_hook_active:
        return Decision("silent", used, shown)
    if used < budget:
        return Decision("block", used + 1, shown)
    if not shown:
        return Decision("receipt", used, True)
    return Decision("silent", used, shown)
