"""Each system check has its own id (issue 40, item 7): every id the code can report is
in docs/deployment.md's table once, and the settings that borrowed other checks' ids
now report their own."""
import re
from pathlib import Path

from django.core.checks import run_checks

ROOT = Path(__file__).resolve().parents[2]
ID = re.compile(r"\"((?:horizon|queueing)\.[EW]\d{3})\"")


def ids_in_code() -> set[str]:
    found = set()
    for package in ("queueing", "horizon", "standalone"):
        for path in (ROOT / package).rglob("*.py"):
            found |= set(ID.findall(path.read_text()))
    return found


def documented() -> list[str]:
    text = (ROOT / "docs" / "deployment.md").read_text()
    return re.findall(r"^\| `((?:horizon|queueing)\.[EW]\d{3})` \|", text, re.M)


def test_every_id_is_documented_once():
    table = documented()
    assert len(table) == len(set(table)), "an id is in the table twice"
    assert set(table) == ids_in_code()


def test_settings_that_borrowed_ids_report_their_own(settings):
    settings.HORIZON = {**settings.HORIZON, "trusted_proxy_hops": 0, "mask_keys": "iban",
                        "waits": {"redis:default": -1}, "trim": {"audit": -1},
                        "notifications": ["ftp://x"]}
    found = {e.id for e in run_checks() if e.id.startswith("horizon.")}
    assert {"horizon.E013", "horizon.E014", "horizon.E015", "horizon.E016",
            "horizon.E017"} <= found
    assert not found & {"horizon.E003", "horizon.E007", "horizon.E008"}, found
