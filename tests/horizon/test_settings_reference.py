"""docs/settings.md is written from the tables the settings validation reads (issue 49):
it fails here when it drifts, and every key a table lists is one a reader accepts."""
from horizon.configuration import reference as settings_reference
from horizon.configuration.settings import settings_errors as horizon_errors
from queueing.settings.config import settings_errors as queue_errors
from queueing.settings.connection import CONNECTION_KEYS

# The keys a user can write, counted by horizon/configuration/reference.py's rule: 105 in
# 0.2 (97 distinct names), 99 after issue 49's renames, 100 with issue 50's connection keep_result
# default, 101 with issue 51's HORIZON['apps'] (several apps in one dashboard), 88 once
# issue 49 retired 13 tuning knobs (read with a warning until 0.4), 87
# with quiet folded into log_level ("none"), 86 with the batches block in trim, 60 once
# issue 49 retired 26 more (Sentinel and the embedded server in the url, the failover
# block's derived keys, trim's caps, ...). It may fall, never grow unseen.
MOST_KEYS = 60


def test_the_committed_reference_is_the_generated_one():
    assert settings_reference.REFERENCE.read_text() == settings_reference.render(), (
        "docs/settings.md is stale: run python -m horizon.configuration.reference --write")


def test_the_count_does_not_grow():
    total, names = settings_reference.counted()
    assert total <= MOST_KEYS, f"{total} settings keys; is each new one needed?"
    assert names <= total


def test_every_key_a_table_lists_is_accepted():
    """The reverse drift: a table row the reader would refuse as unknown."""
    block = dict.fromkeys(CONNECTION_KEYS)
    errors = queue_errors({"connections": {"r": block}})
    assert not [e for e in errors if "unknown key" in str(e)], errors
    raw = dict.fromkeys(settings_reference.BLOCKS[3].table)
    raw["supervisors"] = {"s": dict.fromkeys(settings_reference.BLOCKS[4].table)}
    assert not [e for e in horizon_errors(raw) if "unknown key" in str(e)]


def test_every_renamed_key_is_refused_nowhere_and_listed_once():
    text = settings_reference.render()
    for old in settings_reference.RENAMED:
        assert text.count(f"| `{old}` |") >= 1
