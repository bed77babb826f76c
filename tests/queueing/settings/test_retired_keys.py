"""Connection knobs retired in 0.3 (issue 49, "less to learn"): constants now, yet a
block that still writes one keeps its value until 0.4, with a DeprecationWarning and a
queueing.W020 check warning saying what to do instead."""
import pytest

from queueing.settings.config import settings_errors, settings_notes
from queueing.settings.connection import (
    DEFAULT_MAX_DELIVERIES,
    DEFAULT_MIGRATION_BATCH,
    DEFAULT_PREFIX,
    parse_connection,
)
from queueing.settings.failover import DISPATCH_TIMEOUT
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


# -- the second round (issue 49: at most 60 keys) ------------------------------------------
def test_the_embedded_server_and_sentinel_are_urls_and_the_old_keys_still_work():
    url = parse_connection("r", {"url": "redis+embedded:///srv/app/var/redis"})
    assert (url.url, url.embedded_dir) == (None, "/srv/app/var/redis")
    with pytest.warns(DeprecationWarning, match=r"\['embedded_dir'\] is retired: write the "
                                                r"url as redis\+embedded:///that/dir"):
        old = parse_connection("r", {"embedded_dir": "/srv/app/var/redis"})
    assert old == url
    errors = settings_errors({"connections": {"r": {"driver": "redis"}}})
    assert "needs a 'url'" in str(errors[0]) and "redis+embedded:///dir" in str(errors[0])


def test_the_poison_cap_and_the_key_prefix_are_constants_yet_still_read():
    new = parse_connection("r", {"url": "redis://h:1"})
    assert (new.max_deliveries, new.prefix, new.listen) == (DEFAULT_MAX_DELIVERIES,
                                                            DEFAULT_PREFIX, True)
    with pytest.warns(DeprecationWarning) as told:
        old = parse_connection("r", {"url": "redis://h:1", "max_deliveries": 2,
                                     "prefix": "jobs:", "listen": False})
    assert (old.max_deliveries, old.prefix, old.listen) == (2, "jobs:", False)
    said = " ".join(str(w.message) for w in told)
    assert "['max_deliveries'] is retired: a job whose worker dies 5 times" in said
    assert "['prefix'] is retired: queue keys start with 'queues:'" in said
    assert "['listen'] is retired: idle workers on a database connection are woken" in said
    errors = settings_errors({"connections": {"r": {"url": "redis://h:1", "prefix": "{x}"}}})
    assert "['prefix'] must be a string without braces" in str(errors[0])


def test_a_failover_block_takes_its_first_connections_queues_and_the_constant_timeout():
    from queueing.settings.config import parse_settings

    connections = {"redis": {"url": "redis://h:1", "queues": ["a", "b"]},
                   "other": {"url": "redis://h:2", "queues": "*"}}
    new = parse_settings({"connections": {
        **connections, "fo": {"driver": "failover", "connections": ["redis", "other"]}}})
    fo = new.connection("fo")
    assert (fo.queue, fo.queues, fo.dispatch_timeout) == ("default", ("default", "a", "b"),
                                                          DISPATCH_TIMEOUT)
    with pytest.warns(DeprecationWarning) as told:
        old = parse_settings({"connections": {**connections, "fo": {
            "driver": "failover", "connections": ["redis", "other"], "queue": "a",
            "queues": ["a"], "dispatch_timeout": 0.3}}}).connection("fo")
    assert (old.queue, old.queues, old.dispatch_timeout) == ("a", ("a",), 0.3)
    said = " ".join(str(w.message) for w in told)
    for key in ("queue", "queues", "dispatch_timeout"):
        assert f"QUEUE['connections']['fo'][{key!r}] is retired" in said
    errors = settings_errors({"connections": {**connections, "fo": {
        "driver": "failover", "connections": ["redis", "other"], "dispatch_timeout": 0}}})
    assert "['dispatch_timeout'] must be seconds in (0, 30]" in str(errors[0])
    found = settings_notes({"connections": {**connections, "fo": {
        "driver": "failover", "connections": ["redis", "other"], "queues": "*"}}})
    assert found == ["QUEUE['connections']['fo']['queues'] is retired: a failover "
                     "connection's queues are its first connection's; remove it (it is "
                     "still read until 0.4)"]


def test_manage_check_names_the_url_to_write(settings):
    found = old_key_warnings(settings, {"sentinel": {"hosts": ["127.0.0.1:1"],
                                                     "service": "m"}},
                             match="sentinel")
    assert len(found) == 1 and "write the url as redis+sentinel://" in found[0].msg
