"""Many hosts on one Redis: two real `manage.py horizon` masters told apart by HORIZON_NAME."""
import psutil
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from horizon.configuration.settings import HorizonConfigError, master_name
from horizon.repositories import state
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
HOSTS = ("host-a", "host-b")


def by_master(rclient) -> dict:
    return {s.master: s for s in state.supervisors(rclient)}


def master_status(rclient) -> dict[str, str]:
    return {m.name: m.status for m in state.masters(rclient)}


def both_running(rclient) -> bool:
    sups = by_master(rclient)
    return set(master_status(rclient)) == set(HOSTS) and all(
        len(sups.get(h).pids if sups.get(h) else []) == 1 for h in HOSTS)


def children(pid: int) -> set[int]:
    return {p.pid for p in psutil.Process(pid).children(recursive=True)}


@pytest.fixture
def two_hosts(spawn_worker, rclient):
    masters = {name: spawn_worker(command="horizon", env={"HORIZON_NAME": name})
               for name in HOSTS}
    wait_until(lambda: both_running(rclient), timeout=30, message="two masters with a worker")
    return masters


def test_master_name_comes_from_env_then_settings_then_host(monkeypatch):
    monkeypatch.setenv("HORIZON_NAME", "web-2")
    assert master_name("configured") == "web-2"
    monkeypatch.delenv("HORIZON_NAME")
    assert master_name("configured") == "configured"
    assert master_name(None)  # the hostname
    with pytest.raises(HorizonConfigError):
        master_name("a/b")


def test_two_masters_each_run_and_show_their_own_workers(two_hosts, rclient):
    sups = by_master(rclient)
    assert {s.name for s in sups.values()} == {"supervisor-1"}  # same settings, two hosts
    for name, master in two_hosts.items():
        assert set(sups[name].pids) <= children(master.pid)  # its own children, nobody else's
    assert not set(sups["host-a"].pids) & set(sups["host-b"].pids)

    user = User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(user)
    page = client.get("/workers/").content.decode()
    for name in HOSTS:
        assert name in page and str(sups[name].pids[0]) in page
    assert "/masters/host-a/pause/" in page and "/supervisors/host-b:supervisor-1/pause/" in page

    client.post("/masters/host-b/pause/")  # the dashboard's per-host button
    wait_until(lambda: master_status(rclient) == {"host-a": "running", "host-b": "paused"},
               message="only host-b paused")
    client.post("/supervisors/host-a:supervisor-1/pause/")
    wait_until(lambda: by_master(rclient)["host-a"].status == "paused",
               message="host-a's supervisor paused")
    assert by_master(rclient)["host-b"].status == "paused"
    client.post("/control/continue/")  # continue all
    wait_until(lambda: set(master_status(rclient).values()) == {"running"}
               and {s.status for s in by_master(rclient).values()} == {"running"},
               message="everything continued")


def test_pause_and_terminate_target_one_host_or_all(two_hosts, rclient):
    before = {name: set(sup.pids) for name, sup in by_master(rclient).items()}
    call_command("horizon_pause", "--master", "host-a")
    wait_until(lambda: master_status(rclient) == {"host-a": "paused", "host-b": "running"},
               message="only host-a paused")
    jobs.record.delay("while-a-paused")
    ran = wait_until(lambda: jobs.notes(), timeout=15, message="host-b to run the job")
    assert ran[0]["pid"] in before["host-b"]

    with pytest.raises(CommandError, match="no running master named host-c"):
        call_command("horizon_continue", "--master", "host-c")
    call_command("horizon_continue", "--master", "host-a")
    wait_until(lambda: set(master_status(rclient).values()) == {"running"},
               message="host-a continued")

    call_command("horizon_terminate", "--master", "host-b", "--wait", "--wait-timeout", "30")
    assert two_hosts["host-b"].wait(15) == 0
    assert two_hosts["host-a"].running()
    assert set(master_status(rclient)) == {"host-a"}
    # The balancer may be swapping host-a's worker just now: wait for the state to settle.
    def own_workers():
        pids = set(by_master(rclient)["host-a"].pids)
        return pids and pids <= children(two_hosts["host-a"].pid)
    wait_until(own_workers, timeout=10, message="host-a to show only its own workers")

    call_command("horizon_pause")  # all: only host-a is left to hear it
    wait_until(lambda: master_status(rclient) == {"host-a": "paused"}, message="all paused")
    call_command("horizon_terminate", "--wait", "--wait-timeout", "30")
    assert two_hosts["host-a"].wait(15) == 0
