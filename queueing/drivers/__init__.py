"""Queue drivers, one per kind of store, all keeping ``contract.py``:

* ``redis/``: the real one. Every move of a job is one atomic Lua script; also holds the
  Redis keys, the script loader, cluster support and the embedded redis-server.
* ``database/``: jobs in a table of a Django database (PostgreSQL ``SKIP LOCKED``,
  SQLite, MariaDB), written in the caller's transaction.
* ``sync.py``: runs each job inline at dispatch (tests, scripts).
* ``null.py``: drops every job.
"""
