"""The list rows built in Python (horizon/dashboard/jobs/row_html.py) are the rows the
templates rendered, byte for byte: the old row loops are kept in reference_rows/ and
rendered beside the new code for rows read from Redis and the failed store with markup,
quotes, unicode, long, masked and path-breaking values, and for every state, role and
optional cell."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from django.template import Context, Template

from horizon.dashboard.failed import failures
from horizon.dashboard.jobs import facet_counts, facets, listings
from horizon.dashboard.jobs.row_html import csrf_input, facet_choices, failed_rows, job_rows
from horizon.dashboard.shared import formatting
from horizon.queue_reads.queues import QueueRef
from tests.helpers import complete, fail, later, push, superuser_client

pytestmark = pytest.mark.django_db
REFERENCE = Path(__file__).parent / "reference_rows"
TOKEN = "tok3nWith<odd>&\"chars'"
TRICKY_NAMES = ['<script>alert("x")</script>', "O'Brien & \"Sons\" <b>", "Zürich ✓ 日本語",
                "app.jobs." + "long_name_" * 40, "a/b?c=d&e#f %2F"]
TRICKY_TAGS = [["<i>tag</i>", "quote\"'", "ü/ß", "password=hunter2"], [], ["x" * 300]]
TRICKY_ARGS = [([42, "https://u:hunter2@pay.example/"], {"api_token": "tok-secret"}),
               (["<b>bold</b> & \"q\" 'a'"], {"note": "ünïcödé " * 40}), ([], {}),
               ([{"nested": ["<x>", None, 1.5]}], {"password": "p<w>"})]


@pytest.fixture
def client_operator():
    return superuser_client()


class Request:
    def __init__(self, can_operate: bool) -> None:
        self.horizon_can_operate = can_operate


def reference(name: str, **context) -> str:
    return Template((REFERENCE / name).read_text()).render(Context(context))


def fill_tricky(driver, rclient) -> None:
    now = time.time()
    for i, name in enumerate(TRICKY_NAMES):
        args, kwargs = TRICKY_ARGS[i % len(TRICKY_ARGS)]
        fields = {"name": f"app.jobs.{name}", "displayName": name, "args": args,
                  "kwargs": kwargs, "tags": TRICKY_TAGS[i % len(TRICKY_TAGS)]}
        if i == 1:
            fields.update(retryOf="11111111-2222-4333-8444-555555555555", attempts=None,
                          maxTries=None, unknownSince=now - 90)
        if i == 2:
            fields["uuid"] = "odd/uuid with <markup> & \"quotes\""
        push(driver, **fields)
        later(driver, now + 60 + i, **fields)
        complete(rclient, **{**fields, "name": fields["name"]})
        fail(exception=f"{name}: <boom> & \"quoted\"\n\nTraceback ...", **fields)
    for _ in range(2):
        driver.pop("default", owner="gone-host:1:supervisor-1")


STATES = [("pending", "", True), ("delayed", "Due", True), ("reserved", "Lease expires", False),
          ("completed", "Completed", False)]


@pytest.mark.parametrize(("state", "when_label", "removable"), STATES)
@pytest.mark.parametrize("can_operate", [True, False])
@pytest.mark.parametrize("query", ["", "q=%3Cx%3E&tag=%C3%BC+%22a%22"])
@pytest.mark.parametrize("grouping", [False, True])
def test_job_rows_match_the_template_they_replace(driver, rclient, settings, state,
                                                  when_label, removable, can_operate, query,
                                                  grouping):
    settings.USE_THOUSAND_SEPARATOR = grouping  # numbers as the template localized them
    fill_tricky(driver, rclient)
    listing = listings.listing(state, [QueueRef("redis", "default")])
    if state == "reserved":
        listings.mark_gone_holders(listing.rows)
    listings.with_links(state, listing.rows)
    assert len(listing.rows) >= 2
    rows = list(listing.rows)
    if rows:  # the cells a live queue rarely shows at once, on one row
        rows.append(replace(rows[0], holder_gone=True, attempts=None, max_tries=None,
                            pushed_at=None, when=None, reserved_by="",
                            unknown_since=formatting.moment(time.time() - 5, time.time()),
                            score=None, position=1234567, runtime="<1 ms>"))
    context = {"state": state, "can_delete": removable, "when_label": when_label,
               "list_url": "/jobs/<x>/", "query": query, "csrf_token": TOKEN,
               "request": Request(can_operate)}
    old = reference("job_rows.html", listing=replace(listing, rows=rows), **context)
    new = job_rows(rows, state=state, can_pick=removable and can_operate,
                   when_label=when_label, list_url="/jobs/<x>/", query=query,
                   csrf_token=TOKEN)
    assert new == old
    assert "hunter2" not in new and "tok-secret" not in new


@pytest.mark.parametrize("can_operate", [True, False])
@pytest.mark.parametrize("query", ["", "exc=ValueError&q=%3Cb%3E+%C3%BC"])
@pytest.mark.parametrize("token", [TOKEN, ""])
def test_failed_rows_match_the_template_they_replace(driver, rclient, can_operate, query,
                                                     token):
    fill_tricky(driver, rclient)
    listing = failures.listing(None, "")
    assert len(listing.rows) == len(TRICKY_NAMES)
    rows = [*listing.rows, replace(listing.rows[0], failed_at=None, attempts=None,
                                   retry_of="x", tags=[])]
    old = reference("failed_rows.html", listing=replace(listing, rows=rows),
                    list_url="/failed/", query=query, csrf_token=token,
                    request=Request(can_operate))
    new = failed_rows(rows, can_operate=can_operate, list_url="/failed/", query=query,
                      csrf_token=token)
    assert new == old
    assert "hunter2" not in new and "<script>" not in new


def test_pages_render_their_rows_with_the_new_code(client_operator, driver, rclient):
    """The partials call the Python rows: a page's rows carry what the reference did
    (the tags' wiring: request role, csrf token, the list's query)."""
    fill_tricky(driver, rclient)
    for url in ("/jobs/pending/?q=app", "/jobs/delayed/", "/failed/?queue=redis%3Adefault"):
        body = client_operator.get(url).content.decode()
        path, _, query = url.partition("?")
        assert 'name="csrfmiddlewaretoken"' in body and 'class="pick"' in body, url
        assert f'name="next" value="{path}?{query}"'.replace("&", "&amp;") in body, url
    body = client_operator.get("/jobs/delayed/").content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert "<script>alert" not in body


def test_a_missing_csrf_token_renders_nothing_as_the_tag_did():
    # Django's {% csrf_token %} renders "" for NOTPROVIDED (a view exempt from CSRF)
    assert csrf_input("NOTPROVIDED") == "" and csrf_input("") == "" and csrf_input(None) == ""
    assert csrf_input('a"b') == '<input type="hidden" name="csrfmiddlewaretoken" value="a&quot;b">'


@pytest.mark.parametrize("picked", [facets.NOTHING, facets.Picked("app.jobs.<b>&\"x\"", ""),
                                    facets.Picked("", "<i>tag</i>")])
@pytest.mark.parametrize("grouping", [False, True])
def test_facet_choices_match_the_template_they_replace(driver, rclient, settings, picked,
                                                       grouping):
    """Job, queue, tag and time facets counted from Redis (exact, then scaled as an
    estimate, with counts past a thousand), each chosen and not."""
    settings.USE_THOUSAND_SEPARATOR = grouping
    fill_tricky(driver, rclient)
    known = [QueueRef("redis", "default"), QueueRef("redis", "o'dd<q>")]
    base = {"q": "<x>&y", "start": "50"} | picked.params()
    for state in ("pending", "delayed", "completed"):
        found = facet_counts.for_jobs(state, known, None, picked, base)
        scaled = replace(found, counted=3, total=12_345_678, estimated=True)
        for shown in (found, scaled):
            for facet in shown.shown:
                context = {"f": facet, "facets": shown, "list_url": "/jobs/<s>/",
                           "target": "job-list"}
                old = reference("facet_choices.html", **context)
                new = facet_choices(facet, estimated=shown.estimated,
                                    list_url="/jobs/<s>/", target="job-list")
                assert new == old, (state, facet.kind)
    big = facets.facet("tag", "Tag", Counter({"a": 1234567, "<b>": 2}), base, "<b>",
                       counted=1, total=1)
    old = reference("facet_choices.html", f=big, facets=scaled, list_url="/x/", target="t")
    assert facet_choices(big, estimated=True, list_url="/x/", target="t") == old
