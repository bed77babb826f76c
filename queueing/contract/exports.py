"""A package's public names, imported from their modules on first use (PEP 562).

``queueing`` and ``queueing.middleware`` name many classes and functions that a process
mostly does not run: a worker's start imports the package for its early signals or one
submodule, and importing every public name there cost it about a fifth of its start
(issue 52). Each such package keeps a table of name -> module and lets this build its
module-level ``__getattr__`` and ``__dir__``: ``from queueing import job`` reads the same
object as an eager import would, and keeps it in the package's namespace after.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any


def lazy_exports(package: str, homes: dict[str, str], public: Iterable[str],
                 namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of `package`, whose globals are `namespace`."""
    shown = frozenset(public)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *shown})

    return __getattr__, __dir__
