"""A failover connection is a declared role (issue 49): ``connections.router(name)``
answers its Router, made by the failover package that ``QueueingConfig.ready`` handed
in; the driver registry names no class above the drivers."""
from queueing import connections
from queueing.contract.registry import KINDS, kind_of, lands_on
from queueing.contract.roles import QueueDriver
from queueing.contract.router import Router
from queueing.failover.driver import FailoverDriver
from queueing.settings.config import queue_settings
from tests.helpers import queue_with


def test_a_connection_that_does_not_route_has_no_router():
    assert connections.router("redis") is None


def test_a_failover_connection_is_a_router_made_by_its_package(settings):
    url = settings.QUEUE["connections"]["redis"]["url"]
    with queue_with(settings, other={"driver": "redis", "url": url, "queues": "*"},
                    fo={"driver": "failover", "connections": ["redis", "other"]}):
        connections.reset()
        try:
            found = connections.router("fo")
            assert isinstance(found, FailoverDriver) and isinstance(found, Router)
            assert found is connections.driver("fo")  # one per connection, kept
            assert not isinstance(found, QueueDriver)  # workers read its connections
            assert lands_on(queue_settings().connection("fo")) == ["redis", "other"]
        finally:
            connections.reset()


def test_the_registry_names_only_driver_classes():
    for kind in KINDS.values():
        assert kind.path.startswith("queueing.drivers.") or (kind.routes and not kind.path)
    assert kind_of("failover").takes_batches and not kind_of("failover").workers_read
