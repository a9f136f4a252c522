"""taskhttp: the HTTP front door (Starlette + uvicorn), generated from taskcore's registry.

Routes are listed in :mod:`taskhttp.app`; the adapter holds no logic of its own (see
``docs/adapters.md``).
"""

from taskcore.lazy import installed_version

from taskhttp.app import UPLOAD_OPERATION, create_app
from taskhttp.limits import TransportLimits
from taskhttp.openapi import openapi_document
from taskhttp.server import BackgroundServer, address_of, bind, serve

__all__ = [
    "UPLOAD_OPERATION",
    "BackgroundServer",
    "TransportLimits",
    "address_of",
    "bind",
    "create_app",
    "openapi_document",
    "serve",
]


def __getattr__(name: str) -> str:
    """``__version__``: the installed agenttask-http's (the repository's VERSION), read on first use."""
    if name == "__version__":
        return installed_version("agenttask-http")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
