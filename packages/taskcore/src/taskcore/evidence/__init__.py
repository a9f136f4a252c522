"""The authority's word where code lands: the landing recheck, ``land`` and forge statuses.

* :mod:`taskcore.evidence.landing`: ``workflow.landing_check``, admission's checks run *now*
  for a pushed revision and a protected ref;
* :mod:`taskcore.evidence.landing_hook`: the stdlib-only pre-receive hook (a thin caller);
* :mod:`taskcore.evidence.landing_install`: writes and removes that hook in a bare repository;
* :mod:`taskcore.evidence.land`: ``agent-task land``, a compare-and-swap ref update under the
  authority's writer lock;
* :mod:`taskcore.evidence.forge`: forge settings and the commit-status outbox, written in the
  same transaction as the event a status reports;
* :mod:`taskcore.evidence.forge_delivery`: the GitHub and GitLab request shapes and the
  delivery worker ``agent-task serve`` runs.

Modules are imported on use: nothing is imported here, so the collector and the journal can
write outbox rows without import cycles.
"""

__all__: list[str] = []
