"""queueing.W004: the failed-job store on SQLite without the settings workers need.

Why: Django's default SQLite settings (a new project's) open DEFERRED transactions in
rollback-journal mode. Workers that fail jobs together then upgrade a read to a write
mid-transaction, which fails at once with "database is locked" instead of waiting: in a
review, 3 workers failing malformed entries hit it 363 times in 70 s. No job was lost
(each waited in the delayed set and was stored later), but every such failure costs a
retry cycle. ``transaction_mode: IMMEDIATE`` takes the write lock at BEGIN, where the busy
timeout applies, and WAL lets the dashboard read while workers write.
"""
from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from django.core.checks import Warning, register

from queueing.models import FailedJob

# Whole in itself: the hint used to send readers to standalone/settings.py, a file of the
# clone that is not in the wheel a project installs.
HINT = ('Add to your settings: DATABASES[{alias!r}]["OPTIONS"] = {{"transaction_mode": '
        '"IMMEDIATE", "timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"}} '
        "(Django 5.1+).")


def _wal_file(name: Any) -> bool:
    """Is an existing SQLite file in WAL mode? (WAL persists in the file once set.)

    Asked through SQLite, never by opening the file: closing any descriptor of a file
    drops every POSIX lock the process holds on it, SQLite's own included. A process
    that has the database open (a worker or the dashboard running the checks) would lose
    its locks, and another process could then checkpoint and delete the write-ahead log
    under it. A connection of SQLite's own is closed in step with the others."""
    path = Path(str(name))
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True)) as db:
            return str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
    except sqlite3.Error:
        return False


def sqlite_problems(db: dict[str, Any]) -> list[str]:
    """What a SQLite database block lacks for a shared failed store ([] if fine)."""
    if not str(db.get("ENGINE", "")).endswith("sqlite3"):
        return []
    options = db.get("OPTIONS") or {}
    problems = []
    if str(options.get("transaction_mode", "")).upper() != "IMMEDIATE":
        problems.append("transaction_mode is not IMMEDIATE")
    init = str(options.get("init_command", "")).lower().replace(" ", "")
    if "journal_mode=wal" not in init and not _wal_file(db.get("NAME", "")):
        problems.append("the journal mode is not WAL")
    return problems


@register("queueing")
def check_failed_store(app_configs, **kwargs):
    from django.conf import settings
    from django.db import router


    alias = router.db_for_write(FailedJob)
    db = settings.DATABASES.get(alias) or {}
    problems = sqlite_problems(db)
    if not problems:
        return []
    return [Warning(
        f"the failed-job store (database {alias!r}) is SQLite and {' and '.join(problems)}: "
        "workers failing jobs together will hit \"database is locked\" and retry",
        hint=HINT.format(alias=alias), id="queueing.W004")]
