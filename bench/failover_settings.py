"""Settings of bench/failover_cost.py: the bench settings plus a database connection on
a throwaway SQLite file (or PostgreSQL with BENCH_POSTGRES=host:port:user:password:db),
and three failover connections over it: Redis first (up), a refused Redis first (down),
and the plain connections to compare with."""
import os
import tempfile

from bench.settings import *  # noqa: F403
from bench.settings import QUEUE

if os.environ.get("BENCH_POSTGRES"):
    _host, _port, _user, _password, _name = os.environ["BENCH_POSTGRES"].split(":")
    DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": _name,
                             "USER": _user, "PASSWORD": _password, "HOST": _host,
                             "PORT": _port, "CONN_MAX_AGE": 600}}
else:
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(tempfile.mkdtemp(prefix="hz-bench-fo-"), "db.sqlite3"),
        "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE",
                    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}}}
QUEUE["connections"]["db"] = {"driver": "database", "queues": ["bench"]}
QUEUE["connections"]["dead"] = {"driver": "redis", "url": "redis://127.0.0.1:1/0",
                                "queues": ["bench"]}
QUEUE["connections"]["fo-up"] = {"driver": "failover", "connections": ["redis", "db"],
                                 "queues": ["bench"]}
QUEUE["connections"]["fo-down"] = {"driver": "failover", "connections": ["dead", "db"],
                                   "queues": ["bench"], "retry_primary_after": 3600}
