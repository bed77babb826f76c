"""The operator dashboard: server-rendered pages with HTMX partials (no build step).

Views live in ``views/`` (one module per resource), read models in ``reads.py`` and
``listings.py``, and the pure helpers (masking, paging, formatting, charts) in modules
of their own so they can be tested without Redis or a database.
"""
