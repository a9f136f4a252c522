"""The collector fixtures (a registered repository, an authority, a live service) reused here."""

from tests.taskcore.collector.conftest import authority, live, make_descriptor, repo, state

__all__ = ["authority", "live", "make_descriptor", "repo", "state"]
