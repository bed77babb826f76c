"""Jobs settled without running: a member of a cancelled batch, a job past its expiry
(and the record of a start that tells it started: a job that started never expires),
a job whose model row is gone and that asks to be dropped (model_args.py).

Each is the same move: the reservation deleted (a batch member counted as the batch
needs), its unique lock let go, one log line. None is a failure or a retry. Each
function is handed the settler's narrow face (``outcome.Settling``), never the settler."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from queueing.batches import results
from queueing.batches.results import KEEP_FIELD
from queueing.contract.roles import Reservation
from queueing.entries import batch_tag
from queueing.entries.payload import Payload
from queueing.middleware.keys import control_key
from queueing.middleware.store import state_client
from queueing.observability.redaction import printable
from queueing.worker import controls
from queueing.worker.outcome import Outcome, Settling

logger = logging.getLogger("queueing.worker")

VERDICT_TTL = 0.25  # seconds a prefetched member's "may start" verdict is trusted
MAX_KEPT = 4096  # verdicts of rows settled elsewhere (handed back...) are dropped past this


class BatchGate:
    """The start verdicts of one worker's batch members."""

    def __init__(self, store: Any, prefetched: Callable[[], list[Reservation]]) -> None:
        self.store = store  # the driver's batch store
        self.prefetched = prefetched  # the rows the worker holds and has not started
        self._verdicts: dict[str, tuple[bool, float]] = {}

    def fresh(self, token: str) -> bool | None:
        """The verdict for `token` asked for ahead, if still fresh (None: ask)."""
        verdict = self._verdicts.pop(token, None)
        if verdict is None or time.monotonic() - verdict[1] > VERDICT_TTL:
            return None
        return verdict[0]

    def ask(self, held: Reservation, tag: batch_tag.BatchTag, job_uuid: str) -> bool:
        """Ask whether `held` may start, with the verdicts of the batch members
        prefetched with it (kept for when they start); the verdict for `held`."""
        asking = [(tag, job_uuid, held.token)]
        for other in self.prefetched():
            if other.token == held.token or other.token in self._verdicts:
                continue
            found = batch_tag.settling(other.raw)
            if found is not None:
                asking.append((found.tag, found.job_uuid, other.token))
        verdicts = self.store.start_many(asking)
        now = time.monotonic()
        for token, allowed in verdicts.items():
            if token != held.token:
                self._verdicts[token] = (allowed, now)
        if len(self._verdicts) > MAX_KEPT:
            self._verdicts.clear()
        return verdicts.get(held.token, True)


def forget(settler: Settling, held: Reservation, job: Payload, word: str, text: str, *,
           counted: bool = False) -> None:
    """Delete the reservation unrun, let the unique lock go, log `word` and `text`. A
    batch member is counted skipped (a success for its batch, so the batch still ends),
    unless it is `counted` already."""
    outcome = batch_tag.SKIPPED if "batch" in job.data and not counted else None
    if outcome is not None and KEEP_FIELD in job.data:  # a chord member: None in its
        settler.retrying(lambda: results.keep_unrun(settler.driver, job),  # place, first
                         f"keep {word.lower()} member")
    settler.retrying(lambda: settler.driver.delete(held, outcome=outcome),
                     f"delete {word.lower()} job")
    if "unique" in job.data:
        controls.release_unique(settler.driver, job)
    controls.pass_wakes(settler, held, job, controls.running_definition(job))
    settler.log.line(job, word, text)


def batch_allows(settler: Settling, gate: BatchGate | None, held: Reservation,
                 job: Payload) -> bool:
    """A batch member may start unless its batch is cancelled (see BatchGate; no
    `gate`: a driver without batches). A member refused is already counted as
    cancelled; its reservation is dropped here (docs/batches.md)."""
    tag = batch_tag.of_data(job.data)
    if tag is None or gate is None:
        return True
    allowed = gate.fresh(held.token)
    if allowed is None:
        try:
            allowed = settler.retrying(lambda: gate.ask(held, tag, job.uuid), "check batch")
        except Exception as exc:  # a store that refuses this tag: run it as a plain job
            logger.error("could not check the batch of %s %s: %s", job.job, job.uuid,
                         printable(exc, 300))
            allowed = True
    if allowed is not False:
        return True
    forget(settler, held, job, "SKIPPED", f"batch {tag.id} is cancelled", counted=True)
    return False


STARTED_KEEP = 7 * 86400  # seconds a job's recorded start is kept (as its outcomes)


def _started_key(job: Payload) -> str:
    return control_key("started", job.uuid)


def _expiry(job: Payload) -> str:
    """The record holds the expiry it was written under: a retry from the failed store
    is a new start with a fresh expiry (entries/payload.py), so an older run's start
    does not count for it."""
    return repr(job.expires_at)


def record_start(settler: Settling, job: Payload) -> None:
    """Write down that `job` (one with an expiry) starts now, before its code runs, so
    a later delivery knows it started even when this run is never charged (its worker
    and sidecar lost together, or fenced: handed back uncounted). One SET per start of
    a job with an expiry; other jobs pay nothing. Never raises: without the record a
    job that comes back uncounted past its expiry is dropped, as before."""
    try:
        state_client(settler.driver).set(_started_key(job), _expiry(job), ex=STARTED_KEEP)
    except Exception as exc:
        logger.warning("could not record the start of %s %s: %s", job.job, job.uuid,
                       printable(exc, 300))


def started_before(settler: Settling, job: Payload) -> bool:
    """Whether an earlier delivery of `job` started it (read only for a job past its
    expiry that was never charged a run). A store that cannot say: not started."""
    try:
        found = state_client(settler.driver).get(_started_key(job))
        return found is not None and (found.decode() if isinstance(found, bytes)
                                      else found) == _expiry(job)
    except Exception as exc:
        logger.warning("could not read the start of %s %s: %s", job.job, job.uuid,
                       printable(exc, 300))
        return False


def expired(settler: Settling, held: Reservation, job: Payload) -> Outcome:
    """Not started before its expiry: forgotten unrun, never failed nor retried; its
    chain ends here."""
    late = time.time() - (job.expires_at or 0.0)
    forget(settler, held, job, "EXPIRED", f"{late:.3g}s past its expiry before it could start")
    return Outcome("expired", job=job)
