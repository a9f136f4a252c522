"""taskcli: a thin adapter over taskcore's operation registry (see docs/adapters.md).

The ``agent-task`` command; the distribution is ``agenttask``. Importing this package costs
nothing (the Stop hooks import it): ``__version__`` is read on first use.
"""

__all__: list[str] = []


def __getattr__(name: str) -> str:
    """``__version__``: the installed agenttask's (the repository's VERSION), read on first use."""
    if name == "__version__":
        from taskcore.lazy import installed_version

        return installed_version("agenttask")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
