"""Package names that load their module on first use (:pep:`562`), for the packages' ``__init__``.

A package's ``__init__`` lists where each exported name lives; the name's module is imported
the first time the name is read, so importing a package (or one of its light submodules, such
as a Stop hook's) does not import everything it exports.

>>> import types
>>> package = types.ModuleType("demo")
>>> exports = LazyExports("demo", {"json": ("dumps",)}, vars(package))
>>> exports.load("dumps")('x')
'"x"'
>>> "dumps" in vars(package), "dumps" in exports.names()
(True, True)
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: every import of a package runs this module (Stop hooks too)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, MutableMapping
    from typing import Any

__all__ = ["UNKNOWN_VERSION", "LazyExports", "installed_version"]

UNKNOWN_VERSION = "0+unknown"
"""``__version__`` of sources imported without their distribution installed."""


def installed_version(distribution: str) -> str:
    """The installed version of one of our distributions: each package's ``__version__``.

    Every distribution is built with the one version of the repository's ``VERSION`` file
    (``hatch_build.py``), so this is the same for all of them; it is read from the installed
    metadata on first use, never at import (``importlib.metadata`` costs a Stop hook
    milliseconds). Sources imported without their distribution installed get
    :data:`UNKNOWN_VERSION`.

    >>> installed_version("agenttask-core") == installed_version("agenttask")
    True
    >>> installed_version("not-a-distribution-of-ours")
    '0+unknown'
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return UNKNOWN_VERSION


class LazyExports:
    """The exported names of ``package`` and the module each comes from.

    ``namespace`` is the package's ``globals()``: a loaded name is kept there, so the module
    is looked up once per name. With ``distribution``, ``__version__`` is that
    distribution's installed version (:func:`installed_version`).
    """

    def __init__(
        self,
        package: str,
        sources: Mapping[str, Iterable[str]],
        namespace: MutableMapping[str, Any],
        *,
        distribution: str | None = None,
    ) -> None:
        self.package = package
        self.module_of = {name: module for module, names in sources.items() for name in names}
        self.namespace = namespace
        self.distribution = distribution

    def load(self, name: str) -> Any:
        """The package's ``__getattr__``: import ``name``'s module and keep the value."""
        if name == "__version__" and self.distribution is not None:
            self.namespace[name] = installed_version(self.distribution)
            return self.namespace[name]
        module = self.module_of.get(name)
        if module is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        import importlib  # here: a Stop hook imports the package without ever loading a name

        value = getattr(importlib.import_module(module), name)
        self.namespace[name] = value
        return value

    def names(self) -> list[str]:
        """The package's ``__dir__``: what it holds and what it can load."""
        return sorted(set(self.namespace) | set(self.module_of))
