from decimal import Decimal

from queueing import current_job, job, retry


class GatewayBusy(Exception):
    """The payment gateway asks us to try again shortly."""


def gateway_charge(order_id: int, amount: Decimal) -> str:
    """Stands in for the payment gateway: busy on the first try."""
    if current_job().attempts == 1:
        raise GatewayBusy("try again in a second")
    return f"ch_{order_id}_{amount}"


@job(tries=4, backoff=10, keep_result=3600)    # max_retries=3, default_retry_delay=10
def charge(order_id, amount):
    try:
        return gateway_charge(order_id, Decimal(amount))  # amounts travel as str
    except GatewayBusy as exc:
        retry(countdown=1, exc=exc)             # Celery: raise self.retry(exc=exc, countdown=1)


@job(queue="mail")
def send_receipt(order_id):
    return f"receipt for order {order_id}"
