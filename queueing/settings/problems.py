"""Collect every mistake of one settings block instead of stopping at the first.

A parser reads each value through ``Problems.take``: a bad value is recorded and a
fallback stands in for it, so the rest of the block is still read and checked. Issue 31:
a block with an unknown key, min_processes above max_processes and a bad connection
reported only the unknown key, and each fix revealed the next mistake one `manage.py
check` at a time. Shared by queueing/settings/config.py and horizon/ (layer 1: no imports).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Problems:
    """The mistakes found so far in one block, in the order they were read."""

    def __init__(self, kinds: tuple[type[Exception], ...]) -> None:
        self.kinds = kinds  # the exceptions that mean "this value is wrong"
        self.errors: list[Exception] = []
        # old key names read as their new ones (queueing/settings/renamed.py): not
        # mistakes, told by a system check warning until the old names go
        self.notes: list[str] = []

    def add(self, error: Exception) -> None:
        self.errors.append(error)

    def take(self, read: Callable[[], T], fallback: T) -> T:
        """`read()`, or `fallback` with its error recorded when the value is wrong."""
        try:
            return read()
        except self.kinds as exc:
            self.errors.append(exc)
            return fallback

    def raise_first(self) -> None:
        """For callers that need a value or an error (runtime parsing, not the checks)."""
        if self.errors:
            raise self.errors[0]
