"""The operator dashboard: server-rendered pages with HTMX partials (no build step).

Views live in ``views/`` (one module per resource); the read models behind them are
grouped by page family: ``overview/``, ``jobs/`` (the job lists, facets, lookup by
uuid), ``detail/``, ``failed/`` (the failed list, edit-and-retry), ``workers/``,
``metrics/``, ``monitoring/``, ``batches/``, ``schedules/``; who may use it is in
``access/``, and the pure helpers every page uses (masking, paging, formatting, row
links, the 503 page) in ``shared/``, so they can be tested without Redis or a database.
What the metrics exporter reads too (the queues and their numbers) is below the
dashboard, in ``horizon/queue_reads/``.
"""
