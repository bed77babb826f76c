"""Find a batch's pending members: search its queues for entries tagged with the batch.

A batch record counts its members but does not list them (a million-member batch would
need a million-entry set), so a member still waiting could only be found by paging the
whole queue. The batch page's search runs the job lists' bounded scan (listings.listing:
SCAN_WINDOW entries per request, "scan further" from where it stopped) over the pending,
delayed and reserved jobs of the batch's connection, kept to entries whose batch tag
names this batch (`MemberOf`, a facet the scan applies like any other), and matched on
job name, uuid or tag like any list search.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from horizon.dashboard.jobs import listings, lookup
from horizon.dashboard.jobs.facets import Picked
from horizon.queue_reads.queues import known_queues
from queueing.batches.record import Batch
from queueing.entries.batch_tag import of_data

STATES = ("pending", "delayed", "reserved")
PAGE = 50


@dataclass(frozen=True)
class MemberOf(Picked):
    """A facet for listings.listing: only entries that are members of one batch."""

    batch_id: str = ""

    @property
    def any(self) -> bool:
        return True

    def prefilter(self) -> list[bytes]:
        return [self.batch_id.encode()]  # an id is [A-Za-z0-9_-]: in the raw entry as is

    def matches(self, state: str, data: dict, moment: float | None, now: float) -> bool:
        tag = of_data(data)
        return tag is not None and tag.id == self.batch_id


def search(batch: Batch, needle: str, starts: dict[str, int]) -> list[listings.Listing]:
    """One bounded scan per state for members of `batch` matching `needle`; `starts`
    holds where each state's scan resumes ("scan further"). A full uuid is looked up
    through the uuid index instead (the index knows no batch, so the tag is checked)."""
    refs = [ref for ref in known_queues() if ref.connection == batch.connection]
    needle = needle.strip().lower()
    if listings.UUID.fullmatch(needle):
        return [_by_uuid(batch, needle, refs)]
    member_of = MemberOf(batch_id=batch.id)
    return [listings.listing(state, refs, start=starts.get(state, 0), needle=needle,
                             size=PAGE, picked=member_of) for state in STATES]


def _by_uuid(batch: Batch, uuid: str, refs: list) -> listings.Listing:
    found = lookup.locate_anywhere(uuid, refs)
    tag = of_data(found.data) if found is not None else None
    rows = []
    if found is not None and found.ref is not None and tag is not None and tag.id == batch.id:
        rows.append(listings.row_from(found.state, found.ref.label, found.data,
                                      position=found.position or 0, score=found.score,
                                      now=time.time()))
    state = found.state if rows and found is not None else "pending"
    return listings.Listing(state, rows, len(rows), None, None, via_index=True)
