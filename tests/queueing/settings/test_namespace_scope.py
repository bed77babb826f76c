"""Issue 51, item 1: the namespace is an argument, not only a process setting. A reader
(the dashboard) builds every key in another app's namespace inside ``scoped()``, in its
own context only: the process's own keys, and another thread's, are never touched."""
import threading

import pytest

from queueing import connections
from queueing.drivers.redis import keys
from queueing.errors import ConfigurationError
from queueing.settings import namespace
from tests.queueing.settings.test_namespace_keys import TODAY, every_key, in_namespace


def test_a_scope_builds_every_key_in_its_namespace_and_ends_with_its_block():
    with namespace.scoped("blog"):
        assert every_key() == {what: f"blog:{key}" for what, key in TODAY.items()}
        assert namespace.current() == "blog" and namespace.process() == ""
    assert every_key() == TODAY


def test_a_scope_wins_over_the_process_namespace_and_an_empty_one_means_none(settings):
    in_namespace(settings, "shop")
    assert keys.restart_key() == "shop:queueing:restart"
    with namespace.scoped("blog"):
        assert keys.restart_key() == "blog:queueing:restart"
        with namespace.scoped(""):
            assert keys.restart_key() == "queueing:restart"
        assert keys.restart_key() == "blog:queueing:restart"
    assert keys.restart_key() == "shop:queueing:restart"


def test_the_key_builder_takes_the_namespace_as_an_argument():
    assert namespace.namespaced("queueing:paused", "blog") == "blog:queueing:paused"
    assert namespace.namespaced("queueing:paused", "") == "queueing:paused"
    with namespace.scoped("blog"):
        assert namespace.namespaced("queueing:paused", "shop") == "shop:queueing:paused"


def test_the_drivers_key_cache_never_hands_one_namespace_anothers_keys():
    driver = connections.queue_driver("redis")
    assert driver.keys("default").ready == "queues:{default}"
    with namespace.scoped("blog"):
        assert driver.keys("default").ready == "blog:queues:{default}"
    assert driver.keys("default").ready == "queues:{default}"


def test_two_threads_in_two_scopes_never_mix():
    seen: dict[str, set[str]] = {"shop": set(), "blog": set()}
    both_in = threading.Barrier(2)

    def read(space: str) -> None:
        with namespace.scoped(space):
            for _ in range(200):
                both_in.wait() if _ == 0 else None
                seen[space].add(keys.QueueKeys.for_queue("default").ready)

    threads = [threading.Thread(target=read, args=(s,)) for s in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"shop": {"shop:queues:{default}"}, "blog": {"blog:queues:{default}"}}
    assert namespace.current() == ""


@pytest.mark.parametrize("bad", ["{blog}", "a:b", "x" * 65])
def test_a_malformed_scope_is_refused_before_any_key_is_built(bad):
    with pytest.raises(ConfigurationError):
        with namespace.scoped(bad):
            pytest.fail("entered a scope with a malformed namespace")
