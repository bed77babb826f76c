"""The database driver (``driver.py``): jobs in the ``queueing_jobs`` table, reserved
with ``SKIP LOCKED`` where the database has it. ``sql.py`` writes its statements per
vendor, ``delivery.py`` stamps and parses delivery tokens, ``listen.py`` wakes
PostgreSQL workers with LISTEN/NOTIFY. See docs/database-driver.md."""
