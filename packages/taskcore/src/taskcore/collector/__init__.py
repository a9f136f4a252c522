"""The local collector (client side): snapshot a revision, run a pinned recipe, sign, retain.

* :mod:`~taskcore.collector.state`: the owner-private state directory (key, reservations,
  retained transfers);
* :mod:`~taskcore.collector.snapshot`: exact materialization of a commit;
* :mod:`~taskcore.collector.sandbox` and :mod:`~taskcore.collector.runtime`: the local
  process runtime, its isolation and its identity;
* :mod:`~taskcore.collector.collect`: one collection, end to end;
* :mod:`~taskcore.collector.review`: the finite-review controller and replay validation;
* :mod:`~taskcore.collector.client`: the client flows over a running service (checkpoint,
  collect once, retry an upload), written against the ``WorkflowClient`` protocol;
* :mod:`~taskcore.collector.preflight`, :mod:`~taskcore.collector.nextstep`,
  :mod:`~taskcore.collector.stop` and :mod:`~taskcore.collector.stophook`: the checks before
  a claim, the next command to run, and the task-stop hooks;
* :mod:`~taskcore.collector.instructions`: the managed block in agent instruction files.

What crosses the wire lives in :mod:`taskcore.contract` (``collector_records``,
``collector_review``, ``collector_transfer``, ``collector_descriptor``, ``collector_wire``);
the server side (claim, import, receipts, qualification, profiles, the authority's key) in
:mod:`taskcore.evidence`. Git plumbing for both sides is :mod:`taskcore.authority.gitrev`.
``docs/collector.md`` describes the format and the trust it does (and does not) give.
"""

from __future__ import annotations

from taskcore.lazy import LazyExports

TYPE_CHECKING = False  # not typing's: importing the package must stay cheap
if TYPE_CHECKING:
    from taskcore.collector.collect import CollectResult, collect_command
    from taskcore.collector.runtime import detect_sandbox, probe_runtime, run_recipe
    from taskcore.collector.state import CollectorKey, CollectorState, default_state_dir

_SOURCES: dict[str, tuple[str, ...]] = {
    "taskcore.collector.collect": (
        "CollectResult",
        "collect_command",
    ),
    "taskcore.collector.runtime": (
        "detect_sandbox",
        "probe_runtime",
        "run_recipe",
    ),
    "taskcore.collector.state": (
        "CollectorKey",
        "CollectorState",
        "default_state_dir",
    ),
}
_EXPORTS = LazyExports(__name__, _SOURCES, globals())


def __getattr__(name: str) -> object:
    """Load an exported name from its module on first use (:pep:`562`)."""
    return _EXPORTS.load(name)


def __dir__() -> list[str]:
    return _EXPORTS.names()


__all__ = [
    "CollectResult",
    "CollectorKey",
    "CollectorState",
    "collect_command",
    "default_state_dir",
    "detect_sandbox",
    "probe_runtime",
    "run_recipe",
]
