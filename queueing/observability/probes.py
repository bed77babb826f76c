"""Exit codes of the health checks (``queue_worker_status``, ``horizon_status --master``),
one scheme for both so a probe reads them alike (docs/deployment.md lists them):

  0  alive and ready (taking jobs)
  1  alive, not ready (paused)
  2  not alive (frozen, its loop stuck, or not running at all)
  3  Redis cannot be reached: nothing can be told

``--probe liveness`` answers only "should this process be restarted?": 0 when alive or
paused, 2 when not, and 0 when Redis cannot be reached, because restarting every pod of a
fleet while Redis is away helps nothing (each process reconnects on its own, and the
worker exits by itself after ``--reconnect-timeout``). ``--probe readiness`` answers "is it
taking jobs?": 0 only when ready, else the code above.
"""
from __future__ import annotations

EXIT_READY = 0
EXIT_NOT_READY = 1
EXIT_NOT_ALIVE = 2
EXIT_UNREACHABLE = 3
PROBES = ("liveness", "readiness")


def exit_code(*, alive: bool | None, ready: bool, probe: str | None = None) -> int:
    """The code for what was seen (pure); `alive` None: Redis could not be reached."""
    if alive is None:
        return EXIT_READY if probe == "liveness" else EXIT_UNREACHABLE
    if not alive:
        return EXIT_NOT_ALIVE
    if probe == "liveness" or ready:
        return EXIT_READY
    return EXIT_NOT_READY
