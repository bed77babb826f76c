"""The failed list's text search through the store's trigram index (queueing/state/failed_search.py):
the whole store, not a window of it; kept in step with every write; a count that stops
at its cap while the bulk actions still act on every match."""
import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client
from django.utils import timezone

from horizon.dashboard.failed import failures
from queueing.models import FailedJob
from queueing.state import failed as failed_store
from queueing.state import failed_search
from tests.helpers import fail, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    user = User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client(enforce_csrf_checks=False)
    client.force_login(user)
    return client


def test_the_index_is_built_by_the_migrations():
    failed_search.forget()
    assert failed_search.available("default")


def test_a_search_finds_a_match_older_than_any_window(client, monkeypatch):
    monkeypatch.setattr(failures, "SEARCH_WINDOW", 10)
    base = timezone.now()
    for i in range(40):
        fail(name="app.jobs.Needle" if i == 35 else "app.jobs.Hay",
             exception="SMTPError: relay refused\n\nTraceback" if i == 30 else
             "ValueError: nothing", when=base - dt.timedelta(seconds=i))
    page = text(client.get("/failed/?q=needle"))
    assert ">Needle<" in page and "1–1 of 1 failed job matching “needle”" in page
    assert "Search older" not in page  # no window to page through
    # the exception text, case-insensitively, and a phrase with a space in it
    assert "1–1 of 1" in text(client.get("/failed/?q=smtperror: RELAY"))


def test_needles_are_text_never_query_syntax(client):
    fail(exception='KeyError: \'say "hi" NEAR(a b) * OR AND\'\n\nTraceback')
    for needle in ['"hi"', "NEAR(a", "* OR AND", '")', "a:b"]:
        response = client.get("/failed/", {"q": needle})
        assert response.status_code == 200, needle
    assert "1–1 of 1" in text(client.get("/failed/", {"q": '"hi" NEAR(a b)'}))
    assert "No failed job matches" in text(client.get("/failed/", {"q": "NEAR(b"}))


def test_short_needles_still_search_a_window(client):
    fail(name="app.jobs.Xq")
    page = text(client.get("/failed/?q=xq"))
    assert ">Xq<" in page and "A text search covers" in page


def test_the_index_follows_updates_and_deletes(client):
    row = fail(exception="OldError: before\n\nTraceback")
    assert "1–1 of 1" in text(client.get("/failed/?q=olderror"))
    FailedJob.objects.filter(pk=row.pk).update(exception="NewError: after\n\nTraceback")
    assert "No failed job matches" in text(client.get("/failed/?q=olderror"))
    assert "1–1 of 1" in text(client.get("/failed/?q=newerror"))
    failed_store.forget(row.uuid)
    assert "No failed job matches" in text(client.get("/failed/?q=newerror"))
    with connections["default"].cursor() as cursor:  # the index's own consistency check
        cursor.execute("INSERT INTO queueing_failed_search(queueing_failed_search) "
                       "VALUES ('integrity-check')")


def test_the_count_stops_at_its_cap_and_the_bulk_action_takes_every_match(client, monkeypatch):
    monkeypatch.setattr(failed_search, "COUNT_CAP", 5)
    base = timezone.now()
    for i in range(8):
        fail(exception="TimeoutError: smtp\n\nTraceback", when=base - dt.timedelta(seconds=i))
    fail(exception="ValueError: other\n\nTraceback")
    page = text(client.get("/failed/?q=timeouterror"))
    assert "Delete all 5+ matching" in page and "1–8 of 8+ failed jobs" in page
    upto = failures.matching(q="timeouterror").upto
    assert upto == max(FailedJob.objects.filter(exception__startswith="Timeout")
                       .values_list("id", flat=True))
    client.post("/failed/delete/", {"q": "timeouterror", "upto": upto})
    assert list(FailedJob.objects.values_list("exception_class", flat=True)) == ["ValueError"]


@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_postgresql_searches_through_its_trigram_indexes():
    from django.conf import settings

    if "pg" not in settings.DATABASES:
        pytest.skip(settings.PG_SKIP_REASON or "no PostgreSQL")
    failed_search.forget()
    assert failed_search.available("pg")
    rows = FailedJob.objects.using("pg")
    rows.all().delete()
    for i in range(12):
        rows.create(uuid=f"u{i}", connection="redis", queue="default", job=f"app.jobs.J{i}",
                    payload="{}", exception=("SMTPError: 100% refused_x" if i % 3 == 0 else
                                             "ValueError: no") + "\n\nTraceback")
    newest = failed_search.newest_matches("smtperror: 100% REFUSED_", rows, 0, 3)
    assert newest == sorted(rows.filter(exception__startswith="SMTP")
                            .values_list("id", flat=True), reverse=True)[:3]
    assert failed_search.newest_matches("100%_", rows, 0, 10) == []  # % and _ are text
    count, upto, more = failed_search.count_matches("smtperror", rows)
    assert (count, more) == (4, False) and upto == newest[0]
    with connections["pg"].cursor() as cursor:  # the planner can use the index
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("EXPLAIN SELECT id FROM queueing_failedjob WHERE exception ILIKE "
                       "'%smtp%'")
        plan = " ".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "queueing_failed_exception_trgm" in plan
    rows.all().delete()


@pytest.mark.django_db(transaction=True)
def test_an_existing_store_is_indexed_in_chunks_and_stays_exact(client, monkeypatch):
    """Migration 0008 on a store with rows: indexed a chunk per transaction; a row
    deleted or changed before its chunk came leaves the index exact."""
    connection = connections["default"]
    failed_search.drop(connection)
    failed_search.forget()
    rows = [fail(name=f"app.jobs.Old{i}", exception=f"OldError: number {i}\n\nTraceback")
            for i in range(7)]
    monkeypatch.setattr(failed_search, "BACKFILL_CHUNK", 3)
    assert failed_search.create(connection)
    failed_search.forget()
    assert "1–7 of 7 failed jobs matching “olderror”" in text(client.get("/failed/?q=olderror"))
    with connection.cursor() as cursor:  # as if row 0 had not been reached yet
        cursor.execute("INSERT INTO queueing_failed_search(queueing_failed_search, rowid, job, "
                       "queue, exception) SELECT 'delete', id, job, queue, exception "
                       "FROM queueing_failedjob WHERE id = %s", [rows[0].pk])
    FailedJob.objects.filter(pk=rows[0].pk).delete()  # not in the index: nothing to take out
    FailedJob.objects.filter(pk=rows[1].pk).update(exception="NewError: changed")
    assert "1–5 of 5" in text(client.get("/failed/?q=olderror"))
    assert "1–1 of 1" in text(client.get("/failed/?q=newerror"))
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO queueing_failed_search(queueing_failed_search) "
                       "VALUES ('integrity-check')")
