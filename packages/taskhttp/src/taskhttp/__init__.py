"""taskhttp: a thin adapter over taskcore's operation registry (see docs/adapters.md)."""

__all__: list[str] = []
