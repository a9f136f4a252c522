"""The collector fixtures (a registered repository, an authority, a live service) reused here."""

from tests.taskcore.collector.conftest import authority, live, repo, state

__all__ = ["authority", "live", "repo", "state"]
