"""The server of this test leg is the one TEST_BACKEND names (a leg must not pass by
quietly running on something else)."""
import os

from redis.cluster import RedisCluster


def test_the_leg_runs_on_the_server_it_names(rclient):
    backend = os.environ.get("TEST_BACKEND", "redis")
    if backend == "cluster":
        assert isinstance(rclient, RedisCluster)
        assert len(rclient.get_primaries()) == 3
        assert rclient.cluster_info()["cluster_state"] == "ok"
        return
    info = rclient.info("server")
    assert not isinstance(rclient, RedisCluster)
    if backend == "valkey":
        assert info.get("server_name") == "valkey" and info["valkey_version"]
    else:
        assert "valkey_version" not in info and info["redis_version"]
