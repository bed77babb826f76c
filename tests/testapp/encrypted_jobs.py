"""Encrypted jobs for tests/queueing/worker/test_encrypted_jobs.py. Each notes a digest of
its secret, never the secret: the tests scan every Redis key for the plaintext."""
import hashlib

from queueing import job
from tests.testapp.jobs import RAN, note


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@job(encrypted=True, tries=1)
def keep_secret(secret, label):
    note(RAN, label=label, digest=digest(secret))


@job(encrypted=True, tries=1)
def refuse_secret(secret, label, **options):
    """Fails; its message names the label only (a job's own message is its author's)."""
    raise RuntimeError(f"refused {label}")


@job(tries=1)
def plain_secret(secret, label):
    """Not encrypted itself: sealed only on an encrypting connection."""
    note(RAN, label=label, digest=digest(secret))


@job(encrypted=True, tries=1)
def sealed_result(secret, label):
    """A sealed chord member whose result (`result_of`) is derived from its secret."""
    note(RAN, label=label, digest=digest(secret))
    return result_of(secret)


def result_of(secret):
    return digest("result:" + secret)[:12]


@job(encrypted=True, tries=1)
def collect_secret(results, secret, label):
    """A sealed chord callback: notes the members' results and a digest of its secret."""
    note(RAN, label=label, digest=digest(secret), results=digest(repr(results)))


@job(tries=1)
def collect_plain(results, label):
    """A chord callback that is not encrypted itself (notes a digest of its results)."""
    note(RAN, label=label, results=digest(repr(results)))
