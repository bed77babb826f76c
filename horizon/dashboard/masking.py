"""Hide secrets in job data before it reaches a page.

The policy lives in :mod:`queueing.redaction` so the worker's log lines, the queue
commands and the dashboard hide the same things; this module names what pages use.
"""
from queueing.redaction import (
    CLIP_MARGIN,
    MASK,
    TOO_DEEP,
    clip,
    display,
    is_secret_key,
    mask,
    mask_text,
)

__all__ = ["CLIP_MARGIN", "MASK", "NAME_LIMIT", "TAG_LIMIT", "TOO_DEEP", "clip", "display",
           "is_secret_key", "mask", "mask_text"]

NAME_LIMIT = 200  # characters of a job name, uuid or tag in a list row
TAG_LIMIT = 20  # tags shown per row


def shown_tags(data: dict) -> list[str]:
    """A payload's tags as a row shows them: a few, each masked and clipped."""
    tags = data.get("tags") if isinstance(data.get("tags"), list) else []
    return [display(str(tag), NAME_LIMIT) for tag in tags[:TAG_LIMIT]]

