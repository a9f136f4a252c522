"""Shared pieces of the done-gate tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def stop_payload(path: Path, **extra: Any) -> bytes:
    """A harness's Stop hook input naming the transcript at ``path`` (``extra`` added)."""
    return json.dumps(
        {
            "session_id": "s",
            "transcript_path": str(path),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            **extra,
        }
    ).encode()
