"""Starting the embedded Redis the way the run command does."""
import subprocess
import sys
import tempfile

import redis

from queueing.drivers.redis.embedded import EmbeddedRedis
from tests.conftest import ROOT, subprocess_env


def test_ensure_running_starts_once_persists_and_stops():
    directory = tempfile.mkdtemp(prefix="hz-emb-")
    server = EmbeddedRedis(directory)
    try:
        url = server.ensure_running()
        assert url == f"unix://{directory}/redis.sock"
        pid = server.pid()
        assert server.ensure_running() == url and server.pid() == pid  # idempotent
        client = redis.Redis.from_url(url)
        assert client.config_get("appendonly")["appendonly"] == "yes"
        client.rpush("queues:{default}", "kept")
        client.close()
        server.stop()
        assert not server.is_running()
        server.ensure_running()
        client = redis.Redis.from_url(url)
        assert client.lrange("queues:{default}", 0, -1) == [b"kept"]  # survived a restart
        client.close()
    finally:
        server.stop()


def test_run_command_path_starts_the_configured_embedded_server():
    """`manage.py embedded_redis start` (what `make run` calls) with no Redis URL set."""
    var_dir = tempfile.mkdtemp(prefix="hz-run-")
    env = subprocess_env(HORIZON_VAR_DIR=var_dir, DJANGO_SETTINGS_MODULE="standalone.settings")
    env.pop("QUEUE_REDIS_URL", None)
    try:
        out = subprocess.run([sys.executable, str(ROOT / "manage.py"), "embedded_redis", "start"],
                             env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        assert f"unix://{var_dir}/redis/redis.sock" in out.stdout
        assert EmbeddedRedis(f"{var_dir}/redis").is_running()
    finally:
        EmbeddedRedis(f"{var_dir}/redis").stop()
