"""The Redis driver (``driver.py``) and what only it uses: key names (``keys.py``), the
Lua scripts (``lua/``, loaded by ``scripts.py``), Redis Cluster waits (``cluster.py``),
the restart stamp and paused-queue set (``control.py``) and the embedded redis-server
that ``make run`` and the tests start (``embedded.py``)."""
