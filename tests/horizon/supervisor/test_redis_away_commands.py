"""Issue 35, item 5: with Horizon's Redis away, `manage.py horizon` and `horizon_status`
say so in one line naming the connection (its password masked), with no traceback, and
exit 3 (as `horizon_status` documents for "cannot tell"). Real processes, a Redis URL
nothing listens on."""
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parents[3]
DEAD = "redis://:s3cret-pass@127.0.0.1:1/0"


@pytest.mark.parametrize("command", ["horizon", "horizon_status"])
def test_redis_away_is_one_clear_line_and_exit_3(command):
    env = subprocess_env(TEST_REDIS_URL=DEAD)  # no MariaDB: its test database may not exist
    # the master waits for Redis first (--reconnect-timeout, issue 40): 0 gives up at once
    extra = ["--reconnect-timeout=0"] if command == "horizon" else []
    done = subprocess.run([sys.executable, "manage.py", command, *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("CommandError: cannot reach Redis for connection 'redis' "
                               "(redis://:********@127.0.0.1:1/0)")
    assert lines[0].endswith("Error 111 connecting to 127.0.0.1:1. Connection refused.")
    assert "s3cret" not in done.stdout + done.stderr
