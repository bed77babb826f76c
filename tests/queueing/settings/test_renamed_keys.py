"""Connection keys renamed in 0.3 (issue 49, "less to learn"): each family of old names
still reads as its new place, and says so (a DeprecationWarning and queueing.W020)
naming the key to write instead, until 0.4."""
import dataclasses

import pytest

from queueing.settings.config import parse_settings, settings_errors, settings_notes
from queueing.settings.connection import parse_connection
from queueing.settings.renamed import lift
from tests.helpers import old_key_warnings

NEW_SENTINEL = {"driver": "redis", "replica_acks": 1,
                "url": "redis+sentinel://:s3cret@10.0.0.1:26379,10.0.0.2:26379/mymaster",
                "options": {"password": "p4ss", "db": 2, "ssl": True}}
OLD_SENTINEL = {"driver": "redis", "replica_acks": 1,
                "sentinels": ["10.0.0.1:26379", "10.0.0.2:26379"], "service_name": "mymaster",
                "sentinel_password": "s3cret", "sentinel_ssl": False,
                "password": "p4ss", "db": 2, "ssl": True}


def test_the_flat_sentinel_keys_read_as_the_sentinel_url_and_options():
    """0.2's flat keys go through the retired sentinel block (also read until 0.4) to
    the fields a redis+sentinel:// url gives; only the sentinels' TLS, off while the
    primary's is on, has no url spelling (rediss+sentinel:// is TLS to both)."""
    new = parse_connection("redis", NEW_SENTINEL)
    with pytest.warns(DeprecationWarning) as told:
        old = parse_connection("redis", OLD_SENTINEL)
    assert old == dataclasses.replace(new, sentinel_ssl=False)
    assert old.options == new.options
    assert (old.sentinels[0], old.service_name, old.sentinel_password, old.password,
            old.db, old.ssl, old.sentinel_ssl) == (
        ("10.0.0.1", 26379), "mymaster", "s3cret", "p4ss", 2, True, False)
    messages = " ".join(str(w.message) for w in told)
    for old_key, new_key in (("sentinels", "['sentinel']['hosts']"),
                             ("service_name", "['sentinel']['service']"),
                             ("sentinel_password", "['sentinel']['password']"),
                             ("sentinel_ssl", "['sentinel']['ssl']"),
                             ("password", "['options']['password']"),
                             ("db", "['options']['db']"), ("ssl", "['options']['ssl']")):
        assert f"[{old_key!r}] is renamed QUEUE['connections']['redis']{new_key}" in messages
    assert "['sentinel'] is retired: write the url as redis+sentinel://" in messages


def test_the_sentinels_tls_still_follows_the_primarys_unless_told():
    """0.2's "ssl" meant TLS to the primary and, unless sentinel_ssl said no, to the
    sentinels: options["ssl"] keeps both halves."""
    block = {"url": "redis+sentinel://h:26379/m", "options": {"ssl": True}}
    assert parse_connection("r", block).sentinel_ssl is True
    old = {"sentinel": {"hosts": ["h:26379"], "service": "m", "ssl": False},
           "options": {"ssl": True}}
    with pytest.warns(DeprecationWarning, match=r"\['sentinel'\] is retired"):
        assert parse_connection("r", old).sentinel_ssl is False


def test_the_socket_timeouts_read_as_client_options_and_stay_fields():
    new = parse_connection("r", {"url": "redis://h:1", "options": {
        "socket_timeout": 2, "socket_connect_timeout": 1, "retry_on_timeout": True}})
    with pytest.warns(DeprecationWarning) as told:
        old = parse_connection("r", {"url": "redis://h:1", "socket_timeout": 2,
                                     "socket_connect_timeout": 1,
                                     "options": {"retry_on_timeout": True}})
    said = " ".join(str(w.message) for w in told)
    assert "['options']['socket_timeout']" in said
    assert "['options']['socket_connect_timeout']" in said
    assert old == new and (new.socket_timeout, new.socket_connect_timeout) == (2.0, 1.0)
    # fields, not client options: the sidecar's shorter reply timeout must still win
    assert new.options == {"retry_on_timeout": True}
    errors = settings_errors({"connections": {"r": {"url": "redis://h:1",
                                                    "options": {"socket_timeout": 0}}}})
    assert "['options']['socket_timeout'] must be seconds in (0, 3600]" in str(errors[0])


def test_the_cluster_flag_still_works_and_points_at_the_url_scheme():
    with pytest.warns(DeprecationWarning, match=r"redis\+cluster://"):
        old = parse_connection("c", {"url": "redis://h:7000", "cluster": True})
    assert old == parse_connection("c", {"url": "redis+cluster://h:7000"})


def test_the_primarys_flat_login_was_never_read_without_sentinel_and_is_not_now():
    """On a url connection 0.2 accepted "password", "db" and "ssl" and ignored them;
    they are not handed to redis-py now (the URL says them), only named as dead."""
    notes = settings_notes({"connections": {"r": {"url": "redis://h:1/3", "db": 5}}})
    assert notes == ["QUEUE['connections']['r']['db'] was never read on a connection "
                     "without Sentinel (the URL says it); remove it"]
    with pytest.warns(DeprecationWarning, match="was never read"):
        read = parse_settings({"connections": {"r": {"url": "redis://h:1/3", "db": 5}}})
    assert parse_connection("r", {"url": "redis://h:1/3"}) == read.connection()


def test_manage_check_names_each_old_key(settings):
    found = old_key_warnings(settings, {"url": "redis://127.0.0.1:1", "socket_timeout": 3},
                             match="socket_timeout")
    assert len(found) == 1 and "['options']['socket_timeout']" in found[0].msg


def test_lift_keeps_the_new_key_when_both_are_given():
    lifted, notes = lift("Q", {"a": 1, "b": {"c": 2}}, {"a": "b.c"})
    assert lifted == {"b": {"c": 2}} and "both are set" in notes[0]


def test_an_old_key_whose_new_home_is_no_dict_is_left_for_the_reader_to_name():
    errors = settings_errors({"connections": {"r": {"url": "redis://h:1", "options": "x",
                                                    "socket_timeout": 3}}})
    told = " ".join(map(str, errors))
    assert "['options'] must be a dict" in told and "unknown key 'socket_timeout'" in told
