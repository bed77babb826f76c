"""A worker's start without the cyclic garbage collector; what the start made, frozen.

A worker's start imports some 900 modules (Django, the apps, the job modules) and makes
about 75,000 objects that live as long as the process. With the collector on, those
allocations set off a collection every 700 objects, and each older generation is walked
again and again as it grows: about a tenth of the start's CPU (45-50 ms of 400-450 on a
2-CPU VM); then ``Worker.run``'s full collection before its ``gc.freeze()`` walked them
all once more (about 20 ms), all of it before the first job (issue 52).

So a ``runworker`` process turns the collector off as the first thing it does (from
``import queueing``, beside its early signals), and ``runworker`` turns it back on once
its imports and checks are done, after freezing what is there: the objects of the start
are out of every later collection's sight, as ``Worker.run`` meant, and its own
collection walks only what was made since. What the start left as cyclic garbage
(about 1,200 objects, 0.2 MiB) is frozen with the rest instead of collected. A process
that is not a worker, or whose collector was already off, is left as it is. Stdlib only:
it runs before Django is imported.
"""
from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Turn the collector off until `resume`, unless it is off already."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze every object made so far and turn the collector back on, if `pause`
    turned it off (once)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def paused() -> bool:
    return _paused
