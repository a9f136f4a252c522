"""The operator board (placeholder while it is built)."""
