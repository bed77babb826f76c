"""The Redis driver's package is its one door (queueing/drivers/redis/__init__.py): every
public name resolves to the object inside, and importing one room loads no other."""
import subprocess
import sys

import pytest

import queueing.drivers.redis as door
from queueing.drivers.redis import clients, driver, embedded, reach
from tests.conftest import ROOT


def test_the_door_lists_every_public_name_once_and_each_resolves_to_its_room():
    assert sorted(door.__all__) == sorted(door._DOOR)
    assert door.RedisDriver is driver.RedisDriver
    assert door.make_client is clients.make_client
    assert door.EmbeddedRedis is embedded.EmbeddedRedis
    assert door.forget_reach is reach.forget and door.reach_after_fork is reach.after_fork
    for name in door.__all__:
        assert getattr(door, name) is not None


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="RedisDrivr"):
        door.RedisDrivr  # noqa: B018


def test_importing_one_room_does_not_load_the_driver():
    """The embedded server's command and the key names alone do not load the driver, its
    async twin or its scripts (the door's names load on first use, PEP 562)."""
    code = ("import sys, queueing.drivers.redis.keys, queueing.drivers.redis.embedded; "
            "print(sorted(m for m in sys.modules if m in ("
            "'queueing.drivers.redis.driver', 'queueing.drivers.redis.async_driver', "
            "'queueing.drivers.redis.scripts')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "[]"
