"""The jobs `manage.py demo` dispatches: the shapes an operator meets on a real site
(quick mails, slower image work, a payment that is sometimes declined, a flaky API that
succeeds on a retry, a long report, batches and chains), each sleeping instead of
working. Failures are decided from the arguments, so a run is the same for one seed."""
import time

from queueing import current_job, job


@job(queue="default", tries=3, backoff=[2, 5])
def send_receipt(order_id, ms=40):
    time.sleep(ms / 1000)


@job(queue="low", tries=2, backoff=[3], tags=["images"])
def resize_image(image_id, ms=600):
    time.sleep(ms / 1000)


class CardDeclined(Exception):
    pass


@job(queue="high", tries=3, backoff=[1, 3])
def charge_card(order_id, declined=False, ms=120):
    """Declined cards fail on every try: they end in the failed list with a traceback."""
    time.sleep(ms / 1000)
    if declined:
        raise CardDeclined(f"card for order {order_id} declined by the issuer (code 51)")


@job(queue="default", tries=4, backoff=[2, 4])
def sync_inventory(sku, flaky_tries=1, ms=80):
    """A flaky upstream: fails its first `flaky_tries` attempts, then succeeds, so the
    dashboard shows retries (delayed jobs, attempts) that end well."""
    time.sleep(ms / 1000)
    running = current_job()
    if running is not None and running.attempts <= flaky_tries:
        raise ConnectionError(f"inventory API timed out for {sku} (attempt {running.attempts})")


@job(queue="low", tries=1, timeout=120)
def build_report(day, seconds=6.0):
    time.sleep(seconds)


@job(queue="default", tries=2)
def notify_album_ready(album_id):
    time.sleep(0.02)
