"""The job lists' read models (pending, delayed, reserved, completed, retries, locks):
ranges, facets and their counts, finding one job again by uuid, and the rows as HTML."""
