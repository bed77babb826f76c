"""Hide secrets in job data before it reaches a page.

The policy lives in :mod:`queueing.redaction` so the worker's log lines, the queue
commands and the dashboard hide the same things; this module names what pages use.
"""
from functools import lru_cache

from queueing.redaction import (
    CLIP_MARGIN,
    MASK,
    TOO_DEEP,
    clip,
    display,
    is_secret_key,
    mask,
    mask_keys,
    mask_text,
)

__all__ = ["CLIP_MARGIN", "MASK", "NAME_LIMIT", "TAG_LIMIT", "TOO_DEEP", "clip", "display",
           "is_secret_key", "mask", "mask_text", "shown_name"]

NAME_LIMIT = 200  # characters of a job name, uuid or tag in a list row
TAG_LIMIT = 20  # tags shown per row


def shown_name(value: object) -> str:
    """``display(str(value), NAME_LIMIT)``, remembered per value and mask policy.

    Why: a list page's 50 rows repeat the same few job names, tags, queues and hosts, and
    masking each one anew (a dozen regular expressions) was about a fifth of building the
    rows (bench/dashboard.py --profile). The policy is part of the key, so a settings
    change is never served stale (as facets.shown_tag). Unique values (uuids) are not
    worth remembering: callers use `display` for them."""
    return _shown_name(str(value), mask_keys())


@lru_cache(maxsize=16384)
def _shown_name(text: str, _policy: tuple[str, ...]) -> str:
    return display(text, NAME_LIMIT)  # bounded: 16,384 strings, each clipped to the limit


def shown_tags(data: dict) -> list[str]:
    """A payload's tags as a row shows them: a few, each masked and clipped."""
    raw_tags = data.get("tags")
    tags = raw_tags if isinstance(raw_tags, list) else []
    return [shown_name(tag) for tag in tags[:TAG_LIMIT]]

