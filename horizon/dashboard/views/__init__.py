"""Dashboard views, one module per resource. Each page renders in full, or only its
partial for an HTMX request (a poll, a filter, a page link)."""
