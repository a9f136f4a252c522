"""Wire names that light clients need without loading the service (no imports).

:mod:`taskcore.service` uses and re-exports them.

>>> "workflow.qualification".removeprefix(WORKFLOW_PREFIX)
'qualification'
"""

from __future__ import annotations

__all__ = ["WORKFLOW_PREFIX"]

WORKFLOW_PREFIX = "workflow."
"""Registered names of workflow operations start with this; the envelope names ``<op>`` only."""
