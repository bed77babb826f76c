"""Issue 26, item 7: cron parse errors are E009, the secret key is created race-free, and
SQLite without IMMEDIATE transactions and WAL gets a warning."""
import os
import sqlite3
import sys
import threading

import pytest

from horizon.checks import check_schedules
from horizon.schedules import cron
from queueing.observability import store_checks
from standalone import secret_key
from tests.helpers import posix_lock_holders


@pytest.mark.parametrize("expression", [
    "1" * 4400 + " * * * *", "² * * * *", "*/" + "9" * 5000 + " * * * *", "٣ * * * *",
], ids=["4400-digits", "superscript-two", "5000-digit-step", "arabic-indic-digit"])
def test_bad_cron_strings_are_reported_as_e009(settings, expression):
    with pytest.raises(cron.CronError):
        cron.parse(expression)
    settings.HORIZON = {**settings.HORIZON, "schedule": [
        {"name": "odd", "job": "tests.testapp.jobs.noop", "cron": expression}]}
    assert [e.id for e in check_schedules(None)] == ["horizon.E009"]


def test_many_first_starts_at_once_share_one_secret_key(tmp_path):
    """Threads released together, switching as often as the interpreter allows: every
    one gets the same non-empty key, none crashes (the old O_EXCL create raced)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for trial in range(40):
            folder = tmp_path / f"var{trial}"
            folder.mkdir()
            barrier = threading.Barrier(12)
            keys, errors = [], []

            def start():
                barrier.wait()
                try:
                    keys.append(secret_key.read_or_create(folder / "secret_key"))
                except Exception as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=start) for _ in range(12)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert not errors and len(set(keys)) == 1 and keys[0], (trial, errors, keys)
            assert [p.name for p in folder.iterdir()] == ["secret_key"]
            assert (folder / "secret_key").stat().st_mode & 0o077 == 0
    finally:
        sys.setswitchinterval(interval)


def test_the_settings_module_uses_the_race_free_key(tmp_path, monkeypatch):
    import standalone.settings as site

    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)
    monkeypatch.setattr(site, "VAR_DIR", tmp_path)
    first = site._secret_key()
    assert first and site._secret_key() == first == (tmp_path / "secret_key").read_text()


def test_sqlite_without_immediate_and_wal_is_warned_about(tmp_path):
    default = {"ENGINE": "django.db.backends.sqlite3", "NAME": tmp_path / "db.sqlite3"}
    assert store_checks.sqlite_problems(default) == [
        "transaction_mode is not IMMEDIATE", "the journal mode is not WAL"]
    site = {**default, "OPTIONS": {"transaction_mode": "IMMEDIATE",
                                   "init_command": "PRAGMA journal_mode=WAL;"}}
    assert store_checks.sqlite_problems(site) == []
    connection = sqlite3.connect(tmp_path / "db.sqlite3")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    wal_file = {**default, "OPTIONS": {"transaction_mode": "IMMEDIATE"}}
    assert store_checks.sqlite_problems(wal_file) == [], "WAL set once persists in the file"
    assert store_checks.sqlite_problems({"ENGINE": "django.db.backends.postgresql"}) == []


def test_the_check_reads_the_failed_stores_database(settings):
    assert store_checks.check_failed_store(None) == []  # the test settings are right
    original = settings.DATABASES["default"]["OPTIONS"]
    settings.DATABASES["default"]["OPTIONS"] = {"timeout": 30}
    try:
        [warning] = store_checks.check_failed_store(None)
        assert warning.id == "queueing.W004" and "IMMEDIATE" in warning.hint
    finally:
        settings.DATABASES["default"]["OPTIONS"] = original


def test_the_wal_check_leaves_this_processs_sqlite_locks_alone(tmp_path):
    """The check reads the journal mode through SQLite, not by opening the file: closing
    any descriptor of a file drops all of the process's POSIX locks on it, so a worker
    or dashboard that ran the check with the database open lost its locks, and another
    process could delete the write-ahead log under it."""
    path = tmp_path / "db.sqlite3"
    held = sqlite3.connect(path)
    held.execute("PRAGMA journal_mode=WAL")
    held.execute("CREATE TABLE t (x)")
    held.commit()
    held.execute("SELECT * FROM t").fetchall()
    inode = os.stat(path).st_ino
    assert os.getpid() in posix_lock_holders(inode), "precondition: a WAL connection holds"
    wal_file = {"ENGINE": "django.db.backends.sqlite3", "NAME": path,
                "OPTIONS": {"transaction_mode": "IMMEDIATE"}}
    assert store_checks.sqlite_problems(wal_file) == []
    assert os.getpid() in posix_lock_holders(inode), "the check dropped this process's lock"
    held.close()
