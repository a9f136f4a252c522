"""The route of a workflow call: the repository and profile a transport takes from its URL.

Workflow operations never read their repository and profile from the body; the transport
builds a :class:`Route` from the URL (``/v1/hub/workspace/...?repository=R&profile=P``) and
hands it to the front door, which gives it to the handler (:class:`~taskcore.registry.
CallContext`). :mod:`taskcore.envelope` and :mod:`taskcore.service` re-export it.
"""

from __future__ import annotations

import re

import attrs

from taskcore.errors import ErrorCode, TaskError

__all__ = ["Route"]


_ROUTE_SEGMENT = re.compile(r"[A-Za-z0-9._-]{1,128}")


def _check_route_segment(value: str, what: str) -> None:
    if _ROUTE_SEGMENT.fullmatch(value) is None or value in (".", ".."):
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"the {what} in the URL must match [A-Za-z0-9._-]{{1,128}} and not be '.' or '..'",
        )


@attrs.frozen(kw_only=True)
class Route:
    """Values the transport takes from the URL, never from the body (workflow operations).

    ``repository`` is one identifier or ``OWNER/NAME``; ``profile`` is one identifier.
    Identifiers match ``[A-Za-z0-9._-]{1,128}`` and are never ``.`` or ``..``; anything else
    is refused with ``INVALID_VALUE`` when the route is built.

    >>> Route(repository="acme/widgets", profile="default").repository
    'acme/widgets'
    >>> Route(repository="../etc", profile="p")
    Traceback (most recent call last):
    taskcore.errors.TaskError: the repository in the URL must match [A-Za-z0-9._-]{1,128} and not be '.' or '..'
    """

    repository: str = attrs.field()
    profile: str = attrs.field()

    @repository.validator
    def _check_repository(self, _: attrs.Attribute[str], value: str) -> None:
        parts = value.split("/") if isinstance(value, str) else [""]
        if len(parts) > 2:
            parts = [""]
        for part in parts:
            _check_route_segment(part, "repository")

    @profile.validator
    def _check_profile(self, _: attrs.Attribute[str], value: str) -> None:
        _check_route_segment(value if isinstance(value, str) else "", "profile")
