"""A new Redis connection names its library to the server (CLIENT SETINFO, as redis-py
does by default) without redis-py 8 reading its own version from the installed
packages' metadata at each connection (`importlib.metadata.version`, a few ms a
connection, two before a worker's first job: issue 52)."""
import dataclasses
from importlib import metadata

import pytest
import redis

from queueing.drivers.redis import clients
from queueing.settings.config import queue_settings


def test_a_new_connection_names_redis_py_without_reading_the_package_metadata(
        driver, monkeypatch):
    looked_up = []
    real = metadata.version
    monkeypatch.setattr(metadata, "version",
                        lambda name: looked_up.append(name) or real(name))
    client = clients.make_client(queue_settings().connection("redis"))
    try:
        info = client.client_info()  # a new connection: HELLO/SETINFO/SELECT, then this
        sent = client.connection_pool.get_connection()
        client.connection_pool.release(sent)
    finally:
        client.close()
    assert (sent.driver_info.formatted_name, sent.driver_info.lib_version) == \
        ("redis-py", redis.__version__)
    if "lib-name" in info:  # Redis 7.2 and later keep what CLIENT SETINFO said
        assert (info["lib-name"], info["lib-ver"]) == ("redis-py", redis.__version__)
    assert looked_up == []


@pytest.mark.parametrize("given", [{"lib_name": "mine"}, {"lib_version": "1.0"},
                                   {"driver_info": None}])
def test_what_a_connection_block_says_of_the_library_wins(driver, given):
    config = queue_settings().connection("redis")
    config = dataclasses.replace(config, options={**config.options, **given})
    _, options = clients.client_options(config)
    assert {key: options.get(key) for key in given} == given
    assert "driver_info" not in options or "driver_info" in given
