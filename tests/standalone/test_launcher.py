"""The run command's launcher: dashboard + master up together, both down on Ctrl-C."""
import signal

import pytest

from horizon.repositories import state
from tests.helpers import free_port, http_status
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)






def test_serve_runs_dashboard_and_master_and_stops_both_on_sigint(spawn_worker, rclient):
    port = free_port()
    launcher = spawn_worker(f"--bind=127.0.0.1:{port}", "--web-workers=1", command="serve")
    wait_until(lambda: http_status(f"http://127.0.0.1:{port}/") in (200, 302), timeout=20,
               message="dashboard answering")
    wait_until(lambda: state.overall_status(rclient) == "running", timeout=20)
    launcher.send(signal.SIGINT)
    assert launcher.wait(30) == 0
    assert http_status(f"http://127.0.0.1:{port}/") is None
    wait_until(lambda: state.overall_status(rclient) == "inactive", timeout=5)


def test_serve_leaves_gunicorns_shared_control_socket_alone(spawn_worker, tmp_path):
    """Issue 32: gunicorn's default control socket is one file in the user's home for
    every site; stopping one site removed another's. serve turns it off."""
    port = free_port()
    launcher = spawn_worker(f"--bind=127.0.0.1:{port}", "--web-workers=1", command="serve",
                            env={"HOME": str(tmp_path)})
    wait_until(lambda: http_status(f"http://127.0.0.1:{port}/") in (200, 302), timeout=20,
               message="dashboard answering")
    assert not (tmp_path / ".gunicorn").exists()
    launcher.send(signal.SIGINT)
    assert launcher.wait(30) == 0
