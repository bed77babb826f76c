"""A watched tag's failed jobs, for the tag page's failed-only view (issue 51: the page
mixed every state, 25 a page, and Horizon has a Failed tab per tag).

Read from the failed store, as the Failed list filtered by the tag reads them
(failures.filtered: the tag as shown, among the newest rows of its window), so the view
and the Failed list's link agree; newest first, a page at a time."""
from __future__ import annotations

import time

from horizon.dashboard.failed import failures
from horizon.dashboard.shared import formatting, paging
from horizon.dashboard.shared.masking import NAME_LIMIT, display


def failed_page(tag: str, start_param: str | None, page_size: int) -> tuple[paging.Page,
                                                                             list[dict]]:
    """One page of the tag's failed jobs, as the tag page's rows."""
    rows = failures.filtered(tag=tag)
    total = rows.count()
    start = paging.clamp_start(start_param, total, page_size)
    now = time.time()
    shown = [{"uuid": row.uuid, "shown_uuid": display(row.uuid, NAME_LIMIT),
              "name": display(row.job or "", NAME_LIMIT),
              "queue": display(f"{row.connection}:{row.queue}", NAME_LIMIT),
              "state": "failed", "page_state": "failed",
              "at": formatting.moment(row.failed_at.timestamp(), now), "runtime": ""}
             for row in rows.order_by("-failed_at", "-id")[start:start + page_size]]
    return paging.Page(start, page_size, total), shown
