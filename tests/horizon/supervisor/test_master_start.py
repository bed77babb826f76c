"""`manage.py horizon` started before Redis (issue 40, item 5): it says so in one line,
waits as runworker does, and comes up when Redis does; under systemd (NOTIFY_SOCKET) it
reports READY=1 once it supervises and pings the watchdog while its loop turns."""
import os
import signal
import socket
import subprocess
import tempfile

import pytest
import redis

from horizon.repositories import state
from queueing.drivers.redis.embedded import find_binary
from tests.helpers import free_port, start_master
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def notify_socket():
    """A datagram socket standing in for systemd's NOTIFY_SOCKET."""
    path = os.path.join(tempfile.mkdtemp(prefix="hz-notify-"), "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(0.2)
    yield path, sock
    sock.close()


def answers(client) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def received(sock):
    messages = []
    while True:
        try:
            messages.append(sock.recv(4096).decode())
        except TimeoutError:
            return messages


def test_the_master_waits_for_redis_and_comes_up_when_it_does(spawn_worker, notify_socket):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    path, sock = notify_socket
    master = start_master(spawn_worker, TEST_REDIS_URL=url, NOTIFY_SOCKET=path,
                          WATCHDOG_USEC="400000")
    wait_until(lambda: "waiting for" in master.output(), timeout=30, message="waiting line")
    assert master.running()
    server = subprocess.Popen([find_binary(), "--port", str(port), "--save", "",
                               "--appendonly", "no", "--bind", "127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis.from_url(url)
        # the server listens a moment after it starts: until then a read is refused
        wait_until(lambda: answers(client), timeout=30, message="the new Redis answers")
        wait_until(lambda: state.masters(client), timeout=30, message="master published")
        wait_until(lambda: state.supervisors(client) and state.supervisors(client)[0].pids,
                   timeout=30, message="a worker under the new Redis")
        output = master.output()
        assert "Traceback" not in output, output
        waiting = [line for line in output.splitlines() if "waiting for" in line]
        assert len(waiting) == 1 and f"127.0.0.1:{port}" in waiting[0], output
        assert "answers after" in output
        messages = wait_until(lambda: received(sock), timeout=10, message="notify messages")
        messages += received(sock)
        assert messages[0].startswith("READY=1"), messages
        assert "WATCHDOG=1" in messages, messages
        master.send(signal.SIGTERM)
        assert master.wait(timeout=30) == 0
        assert "STOPPING=1" in received(sock)
    finally:
        server.kill()
        server.wait()


def test_a_stop_signal_while_it_waits_exits_0_at_once(spawn_worker):
    url = f"redis://127.0.0.1:{free_port()}/0"
    master = start_master(spawn_worker, TEST_REDIS_URL=url)
    wait_until(lambda: "waiting for" in master.output(), timeout=30, message="waiting line")
    master.send(signal.SIGTERM)
    assert master.wait(timeout=10) == 0
    assert "Traceback" not in master.output()
