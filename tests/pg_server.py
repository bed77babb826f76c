"""Find the machine's PostgreSQL server and make a role for the tests, or say why not.

The tests never rely on a pre-made role or database: as the server's superuser (over the
local socket: trust or peer authentication, falling back to ``runuser -u postgres``)
they create a ``horizon_test`` role that may create databases, and pytest-django creates
and drops a throwaway database named per test session. ``TEST_POSTGRES`` may instead
give ready settings as ``host:port:user:password``.
"""
from __future__ import annotations

import os
import shutil
import subprocess

ROLE, PASSWORD = "horizon_test", "horizon_test"
SOCKETS = ("/var/run/postgresql", "/tmp")


def _sql_as_superuser(sql: str) -> str | None:
    """Run `sql` as the superuser; None on success, else why it failed."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed"
    errors = []
    for host in SOCKETS:
        if not os.path.exists(host):
            continue
        try:
            with psycopg.connect(dbname="postgres", user="postgres", host=host,
                                 connect_timeout=3, autocommit=True) as conn:
                conn.execute(sql)
            return None
        except psycopg.Error as exc:
            errors.append(f"{host}: {str(exc).strip().splitlines()[0]}")
    if shutil.which("runuser") and os.geteuid() == 0:
        done = subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-qAtc", sql],
                              capture_output=True, text=True, timeout=20)
        if done.returncode == 0:
            return None
        errors.append(f"runuser psql: {done.stderr.strip()[:200]}")
    return "; ".join(errors) or "no PostgreSQL socket found"


def settings() -> tuple[dict | None, str]:
    """DATABASES entry for the tests' PostgreSQL, or (None, the reason it is missing)."""
    given = os.environ.get("TEST_POSTGRES")
    if given:
        host, port, user, password = given.split(":", 3)
    else:
        host, port, user, password = "127.0.0.1", "5432", ROLE, PASSWORD
        problem = _sql_as_superuser(
            f"DO $$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') "
            f"THEN CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{PASSWORD}'; "
            f"ELSE ALTER ROLE {ROLE} LOGIN CREATEDB PASSWORD '{PASSWORD}'; END IF; END$$")
        if problem:
            return None, f"no PostgreSQL server reachable as superuser ({problem})"
    name = os.environ.setdefault("HORIZON_TEST_PG_NAME", f"horizon_test_{os.getpid()}")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": user,
        "PASSWORD": password,
        "HOST": host,
        "PORT": port,
        "TEST": {"NAME": name},
    }, ""
