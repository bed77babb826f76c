"""The operator side: supervisor, dashboard, and the standalone site's wiring."""
