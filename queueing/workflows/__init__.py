"""Workflows: ``group``, ``chord`` and chains that hold them (docs/workflows.md).
``from queueing import group, chord, chain``."""
from queueing.workflows import jobs as _jobs  # noqa: F401  (registers the internal jobs)
from queueing.workflows.canvas import Chord, Group, chain, chord, group

__all__ = ["Chord", "Group", "chain", "chord", "group"]
