"""Views that dispatch on the failover connection 'fo', served by gunicorn for
tests/queueing/failover/test_failover_gunicorn_database.py (TEST_ROOT_URLCONF names
this; TEST_QUEUE_CONNECTIONS configures 'fo'). Each answers how long its `.delay()` took."""
import time

from django.conf import settings
from django.db import transaction
from django.http import JsonResponse
from django.urls import path

from tests.testapp import jobs


def dispatch_job(request):
    started = time.perf_counter()
    uuid = jobs.record.using(connection="fo").delay(request.GET["label"])
    return JsonResponse({"uuid": uuid, "took": time.perf_counter() - started})


def dispatch_to_database(request):
    """The same dispatch straight to the database connection (queue 'plain', which the
    drain leaves alone): what a database write costs here, to compare with."""
    started = time.perf_counter()
    uuid = jobs.record.using(connection=settings.DB_TEST_CONNECTION,
                             queue="plain").delay(request.GET["label"])
    return JsonResponse({"uuid": uuid, "took": time.perf_counter() - started})


def dispatch_then_fail(request):
    """Dispatches inside atomic(), then the view fails: the transaction rolls back."""
    try:
        with transaction.atomic():
            jobs.record.using(connection="fo").delay(request.GET["label"])
            raise RuntimeError("the view failed after dispatching")
    except RuntimeError:
        return JsonResponse({"rolled_back": True}, status=500)


urlpatterns = [path("dispatch/", dispatch_job), path("dispatch-db/", dispatch_to_database),
               path("dispatch-then-fail/", dispatch_then_fail)]
