"""What a dashboard uuid-prefix search costs Redis (issue 48): the old whole-index
``ZSCAN MATCH`` against ``queueing/drivers/redis/lua/uuid_prefix.lua``, which reads the
first ``PREFIX_READ`` uuids of each index, at N indexed jobs.

    .venv/bin/python bench/uuid_prefix_cost.py [N] [ROUNDS]   (defaults 1,000,000 and 3)

Starts a throwaway redis-server on a Unix socket (no persistence), fills one queue's
ready index with N random uuids (scored by sequence, as push.lua writes them), then
times a search for a prefix no uuid has (the worst case: every read member is looked
at) both ways. Redis time is INFO commandstats' usec, reset before each search.
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import uuid

import redis

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from queueing.contract.listing import PREFIX_READ  # noqa: E402


def main(n: int, rounds: int) -> None:
    folder = tempfile.mkdtemp()
    sock = os.path.join(folder, "redis.sock")
    server = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock,
                               "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(unix_socket_path=sock)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        index, due = "queues:{bench}:index", "queues:{bench}:due-index"
        pipe = client.pipeline(transaction=False)
        for start in range(0, n, 10_000):
            pipe.zadd(index, {str(uuid.uuid4()): start + i for i in range(min(10_000, n - start))})
            if start % 100_000 == 0:
                pipe.execute()
        pipe.execute()
        script = client.register_script(
            (ROOT / "queueing/drivers/redis/lua/uuid_prefix.lua").read_text())
        ways = {
            "ZSCAN MATCH, whole index (before)": lambda: list(
                client.zscan_iter(index, match="ffffffff0*", count=1000)),
            f"uuid_prefix.lua, first {PREFIX_READ:,} (after)": lambda: script(
                keys=[index, due], args=["ffffffff0", PREFIX_READ, 2]),
        }
        print(f"{n:,} uuids in the index; Redis ms (commandstats) / wall ms, {rounds} rounds")
        for name, search in ways.items():
            shown = []
            for _ in range(rounds):
                client.config_resetstat()
                began = time.perf_counter()
                search()
                wall = time.perf_counter() - began
                stats = client.info("commandstats")
                usec = sum(v["usec"] for k, v in stats.items() if k != "cmdstat_config")
                shown.append(f"{usec / 1000:.1f} / {wall * 1000:.1f}")
            print(f"  {name}: {', '.join(shown)}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000,
         int(sys.argv[2]) if len(sys.argv) > 2 else 3)
