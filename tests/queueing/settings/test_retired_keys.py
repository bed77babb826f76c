"""Connection knobs retired in 0.3 (issue 49, "less to learn"): constants now, yet a
block that still writes one keeps its value until 0.4, with a DeprecationWarning and a
queueing.W020 check warning saying what to do instead."""
import pytest

from queueing.settings.config import settings_errors, settings_notes
from queueing.settings.connection import DEFAULT_MIGRATION_BATCH, parse_connection
from queueing.settings.sentinel import REPLICA_ACK_TIMEOUT
from tests.helpers import old_key_warnings

OLD = {"url": "redis://h:1", "migration_batch_size": 10, "replica_ack_timeout": 0.2,
       "synchronous_commit": "on"}


def test_the_new_shape_takes_the_constants():
    config = parse_connection("r", {"url": "redis://h:1"})
    assert (config.migration_batch_size, config.replica_ack_timeout,
            config.synchronous_commit) == (DEFAULT_MIGRATION_BATCH, REPLICA_ACK_TIMEOUT, "off")
    assert settings_notes({"connections": {"r": {"url": "redis://h:1"}}}) == []


def test_a_retired_key_still_works_with_a_warning():
    with pytest.warns(DeprecationWarning) as told:
        config = parse_connection("r", OLD)
    assert (config.migration_batch_size, config.replica_ack_timeout,
            config.synchronous_commit) == (10, 0.2, "on")
    said = [str(w.message) for w in told]
    assert len(said) == 3
    assert said[0].startswith("QUEUE['connections']['r']['migration_batch_size'] is "
                              "retired: due jobs move 1000 per pop")
    assert all("still read until 0.4" in s for s in said)


def test_a_retired_key_is_still_checked_until_it_goes():
    errors = settings_errors({"connections": {"r": {**OLD, "migration_batch_size": 0}}})
    assert len(errors) == 1 and "['migration_batch_size'] must be an int >= 1" in str(errors[0])


def test_manage_check_says_what_to_do_instead(settings):
    found = old_key_warnings(settings, {"url": "redis://127.0.0.1:1",
                                        "migration_batch_size": 500},
                             match="migration_batch_size")
    assert len(found) == 1 and "['migration_batch_size'] is retired" in found[0].msg
    assert "remove it" in found[0].msg and found[0].hint == "Rename or remove it; see " \
        "docs/settings.md."
