"""Hide secrets in job data before it reaches a page.

The policy lives in :mod:`queueing.observability.redaction` so the worker's log lines, the queue
commands and the dashboard hide the same things; this module names what pages use.
"""
import re
from functools import lru_cache

from django.apps import apps

from queueing.observability.redaction import (
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
           "display_tag", "is_secret_key", "mask", "mask_text", "shown_name", "shown_tag"]

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
    return [shown_tag(tag) for tag in tags[:TAG_LIMIT]]


def shown_tag(tag: object) -> str:
    """A tag as every page, link and filter names it: masked and clipped (`display_tag`).

    Tags are written by application code and may hold a secret (``password=...``). A
    facet counts, links and matches tags in this form only, so a filter can confirm
    nothing a viewer could not already read, and no raw tag reaches a URL (or the
    access log). Remembered per tag and mask policy, as `shown_name` is: masking was the
    failed list's main cost once its facets read columns (2,000 rows' tags a load,
    mostly the same few thousand values)."""
    return _shown_tag(str(tag), mask_keys())


@lru_cache(maxsize=16384)
def _shown_tag(text: str, _policy: tuple[str, ...]) -> str:
    return display_tag(text, NAME_LIMIT)  # bounded as _shown_name


_MODEL_TAG = re.compile(r"(?P<app>[A-Za-z_]\w{0,99})\.(?P<model>[A-Za-z_]\w{0,99}):"
                        r"(?P<pk>[^\s]{1,100})")


def display_tag(tag: str, limit: int = NAME_LIMIT) -> str:
    """A tag as pages show it: masked and clipped (`display`), except an automatic model
    tag (``auth.User:42``: queueing/entries/model_refs.py), which is judged by its
    model's name: text masking reads ``auth.User:42`` as the secret-looking key ``auth``
    and its value, and would hide every User tag. A model whose name is secret-looking
    (``authtoken.Token``, whose key is the token) stays masked; a key shaped like a
    credential is masked as any text is."""
    found = _MODEL_TAG.fullmatch(tag)
    if found is None or is_secret_key(found["model"]):
        return display(tag, limit)
    try:
        apps.get_model(found["app"], found["model"])
    except LookupError:
        return display(tag, limit)
    return f"{found['app']}.{found['model']}:{display(found['pk'], limit)}"

