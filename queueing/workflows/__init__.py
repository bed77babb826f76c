"""Workflows: ``group``, ``chord`` and chains that hold them (docs/workflows.md).
``from queueing import group, chord, chain``.

Importing the package registers the internal jobs (jobs.py); the canvas's names load on
first use (PEP 562, as ``queueing``'s do), so a worker, which imports the package for
those jobs, does not load the canvas and the batches with it (issue 52)."""
from typing import TYPE_CHECKING

from queueing.contract.exports import lazy_exports
from queueing.workflows import jobs as _jobs  # noqa: F401  (registers the internal jobs)

__all__ = ["Chord", "Group", "chain", "chord", "group"]

__getattr__, __dir__ = lazy_exports(
    "queueing.workflows", dict.fromkeys(__all__, "queueing.workflows.canvas"), __all__,
    globals())

if TYPE_CHECKING:
    from queueing.workflows.canvas import Chord, Group, chain, chord, group
