"""Find the machine's MariaDB (or MySQL 8) server and make a user for the tests.

As for PostgreSQL (tests/pg_server.py), nothing is pre-configured: as root over the local
socket (MariaDB's default unix_socket authentication for root) the tests create a
``horizon_test`` user allowed on ``horizon_test_*`` databases, and pytest-django creates
and drops one per session. The driver is PyMySQL standing in for mysqlclient (no C
client library to build); ``TEST_MARIADB=host:port:user:password`` names another server.
"""
from __future__ import annotations

import os

USER, PASSWORD = "horizon_test", "horizon_test"
SOCKETS = ("/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock", "/tmp/mysql.sock")


def install_pymysql() -> str | None:
    """Let Django's MySQL backend load PyMySQL; None, or why it cannot."""
    try:
        import pymysql
    except ImportError:
        return "PyMySQL is not installed"
    pymysql.version_info = (2, 2, 1, "final", 0)  # what Django 5.2 asks of mysqlclient
    pymysql.install_as_MySQLdb()
    return None


def _as_root(statements: list[str]) -> str | None:
    import pymysql

    errors = []
    for kwargs in [{"unix_socket": s} for s in SOCKETS if os.path.exists(s)] + \
            [{"host": "127.0.0.1", "port": 3306}]:
        try:
            conn = pymysql.connect(user="root", connect_timeout=3, **kwargs)
        except pymysql.Error as exc:
            errors.append(str(exc)[:120])
            continue
        try:
            with conn.cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql)
            return None
        except pymysql.Error as exc:
            return str(exc)[:200]
        finally:
            conn.close()
    return "; ".join(errors) or "no MariaDB socket found"


def settings() -> tuple[dict | None, str]:
    problem = install_pymysql()
    if problem:
        return None, problem
    given = os.environ.get("TEST_MARIADB")
    if given:
        host, port, user, password = given.split(":", 3)
    else:
        host, port, user, password = "127.0.0.1", "3306", USER, PASSWORD
        problem = _as_root([
            f"CREATE USER IF NOT EXISTS '{USER}'@'localhost' IDENTIFIED BY '{PASSWORD}'",
            f"CREATE USER IF NOT EXISTS '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'",
            f"GRANT ALL ON `horizon\\_test\\_%`.* TO '{USER}'@'localhost'",
            f"GRANT ALL ON `horizon\\_test\\_%`.* TO '{USER}'@'127.0.0.1'",
        ])
        if problem:
            return None, f"no MariaDB server reachable as root ({problem})"
    name = os.environ.setdefault("HORIZON_TEST_MARIA_NAME", f"horizon_test_{os.getpid()}")
    return {
        "ENGINE": "django.db.backends.mysql", "NAME": name, "USER": user,
        "PASSWORD": password, "HOST": host, "PORT": port,
        "OPTIONS": {"charset": "utf8mb4"},
        "TEST": {"NAME": name, "CHARSET": "utf8mb4"},
    }, ""
