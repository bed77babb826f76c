"""Issue 47: a master's state is judged by the time Redis was reachable. Its key
outlives an outage (KEEP_TTL, on Redis's clock, which runs on while Redis hangs), and a
heartbeat counts as fresh for STATE_TTL seconds not counting the time the reader found
Redis away since it was written."""
import json
import time
from dataclasses import asdict

from horizon import keys
from horizon.repositories import state
from horizon.repositories.state import KEEP_TTL, STATE_TTL, MasterState


def publish_old(rclient, name: str, heartbeat: float) -> None:
    master = MasterState(name=name, pid=1, host="elsewhere", status="running",
                         started_at=heartbeat - 100, heartbeat=heartbeat)
    rclient.set(keys.master(name), json.dumps(asdict(master)), ex=KEEP_TTL)
    rclient.zadd(keys.masters(), {name: heartbeat})


def test_a_master_silent_while_redis_was_away_still_runs(rclient):
    now = time.time()
    publish_old(rclient, "m", now - 20)
    assert state.masters(rclient, now=now) == []  # 20 s of silence: gone
    assert not state.master_alive(rclient, "m")
    # 18 of those 20 s Redis was away (as this reader saw it): 2 s of real silence
    assert [m.name for m in state.masters(rclient, now=now, away=lambda since: 18.0)] == ["m"]
    assert state.masters(rclient, now=now, away=lambda since: 3.0) == []  # 17 s: gone
    assert rclient.exists(keys.master("m")), "kept past STATE_TTL, for the readers to judge"


def test_fresh_is_state_ttl_less_the_outage():
    assert state.fresh(100.0, 100.0 + STATE_TTL)
    assert not state.fresh(100.0, 100.0 + STATE_TTL + 0.1)
    assert state.fresh(100.0, 100.0 + STATE_TTL + 10, away=lambda since: 10.0)
