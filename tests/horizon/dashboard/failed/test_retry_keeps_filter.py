"""Issue 31 (smaller points): a retry made from a filtered failed list lands on the same
filtered list, whether made from the row, from "Retry all matching", or from the job's
own page reached from that list (plain POSTs: the no-JavaScript path and the job page's
boosted form both follow the redirect). Django test client, real Redis."""
import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from tests.helpers import client_with, fail

pytestmark = pytest.mark.django_db

FILTERED = "/failed/?queue=redis%3Adefault&exc=ValueError"


@pytest.fixture
def operator() -> Client:
    return client_with("operate_dashboard")


def same_list(location: str) -> bool:
    got, want = urlsplit(location), urlsplit(FILTERED)
    return got.path == want.path and parse_qs(got.query) == parse_qs(want.query)


def failures(driver):
    kept = fail(exception="ValueError: bad amount\n\nTraceback ...")
    other = fail(exception="KeyError: 'x'\n\nTraceback ...")
    return kept, other


def test_retry_from_the_job_page_reached_from_a_filtered_list(operator, driver):
    kept, _ = failures(driver)
    listed = html.unescape(operator.get(FILTERED).content.decode())
    link = re.search(rf'href="(/jobs/failed/{kept.uuid}/[^"]*)"', listed).group(1)
    page = html.unescape(operator.get(link).content.decode())
    form = re.search(rf'<form[^>]*/failed/{kept.uuid}/retry/.*?</form>', page, re.S).group(0)
    next_url = re.search(r'name="next" value="([^"]*)"', form).group(1)
    response = operator.post(f"/failed/{kept.uuid}/retry/", {"next": next_url})
    assert response.status_code == 302 and same_list(response["Location"]), response["Location"]


def test_retry_all_matching_without_htmx_lands_on_the_filtered_list(operator, driver):
    kept, other = failures(driver)
    listed = html.unescape(operator.get(FILTERED).content.decode())
    form = re.search(r'<form[^>]*/failed/retry/".*?</form>', listed, re.S).group(0)
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
    response = operator.post("/failed/retry/", fields)
    assert response.status_code == 302 and same_list(response["Location"]), response["Location"]
    assert len(driver.pending("default", 0, -1)) == 1  # only the ValueError was retried
