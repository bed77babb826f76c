"""Jobs of the silenced-jobs tests (tests/horizon/test_silenced_jobs.py)."""
from queueing import Job, job


@job(silenced=True)
def quiet_ping(label):
    return label


class QuietReport(Job):
    silenced = True

    def handle(self, label):
        return label


@job(silenced=True, tries=1)
def quiet_but_failing(label):
    raise RuntimeError(f"silenced boom {label}")
