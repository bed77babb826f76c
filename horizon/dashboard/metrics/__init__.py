"""The metrics page's charts: snapshots over a range, line geometry, hover marks."""
