"""Hide secrets in job data before it reaches a page (pure functions).

Job arguments are written by application code, so a payload may carry a password or an
API token. Operators need the shape of the data, not those values: any mapping key that
looks secret has its value replaced, and credentials embedded in strings (URLs with a
password, ``Bearer`` headers) are cut out.
"""
from __future__ import annotations

import re
from typing import Any

MASK = "********"
SECRET_KEY = re.compile(r"password|passwd|pwd|token|secret|key|authorization|credential",
                        re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.\-]*://[^/\s:@]*:)[^@\s/]+(?=@)",
                           re.IGNORECASE)
_BEARER = re.compile(r"(?P<head>\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]{8,}",
                     re.IGNORECASE)


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and SECRET_KEY.search(key) is not None


def mask_text(text: str) -> str:
    """Cut passwords out of URLs and bearer-style credentials out of free text."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _BEARER.sub(lambda m: m.group("head") + MASK, text)


def mask(value: Any) -> Any:
    """A copy of `value` with secret-looking keys' values and embedded credentials masked."""
    if isinstance(value, dict):
        return {key: MASK if is_secret_key(key) and item not in (None, "")
                else mask(item) for key, item in value.items()}
    if isinstance(value, list):
        return [mask(item) for item in value]
    if isinstance(value, str):
        return mask_text(value)
    return value
