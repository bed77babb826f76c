"""Hide secrets in job data before it reaches a page.

The policy lives in :mod:`queueing.redaction` so the worker's log lines, the queue
commands and the dashboard hide the same things; this module names what pages use.
"""
import re

from django.apps import apps

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
           "display_tag", "is_secret_key", "mask", "mask_text"]

NAME_LIMIT = 200  # characters of a job name, uuid or tag in a list row
TAG_LIMIT = 20  # tags shown per row


def shown_tags(data: dict) -> list[str]:
    """A payload's tags as a row shows them: a few, each masked and clipped."""
    raw_tags = data.get("tags")
    tags = raw_tags if isinstance(raw_tags, list) else []
    return [display_tag(str(tag)) for tag in tags[:TAG_LIMIT]]


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

