"""Row links of the job lists, built once per page instead of once per row.

Why: a list page of 50 rows reversed four URLs a row in its template (`{% url %}`), and
template rendering was about 70% of a list load at a million pending jobs (a profile
of the reserved and pending pages). `reverse` is run once per URL name with a marker in
place of the row's value; each row's link is then the marker replaced by the value, as
the URL's path converter (`Name.to_url`) and `reverse` itself quote it.
"""
from __future__ import annotations

from urllib.parse import quote

from django.urls import reverse

MARKER = "HZROWVALUE"  # made of characters no quoting step changes
SEGMENT_SAFE = ":@!$&'()*+,;=~"  # what a name keeps unquoted in its path segment
SAFE = "!$&'()*+,;=/~:@"  # what reverse leaves as it is (RFC 3986 sub-delims, /~:@)


def segment(value: object) -> str:
    """A stored name (uuid, queue, supervisor) as one path segment: percent-encoded, so
    a name holding ``/`` still makes a link (urls.Name, the ``hz_name`` converter)."""
    return quote(str(value), safe=SEGMENT_SAFE)


class RowLink:
    """One URL name's path with a row's value (a uuid) in place of `MARKER`."""

    def __init__(self, name: str, *before: str) -> None:
        self.before, self.after = reverse(name, args=[*before, MARKER]).split(MARKER)

    def __call__(self, value: str) -> str:
        return self.before + quote(segment(value), safe=SAFE) + self.after
