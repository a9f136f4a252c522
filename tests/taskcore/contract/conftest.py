"""The collector fixtures (a git repository, a collector state, descriptors) reused here."""

from tests.taskcore.collector.conftest import make_descriptor, repo, state

__all__ = ["make_descriptor", "repo", "state"]
