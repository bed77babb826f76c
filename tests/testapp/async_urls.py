"""An async view that dispatches with ``adelay``, served by tests/queueing/dispatching/test_async_dispatch.py
under a real ASGI server (tests/testapp/asgi.py, with TEST_ROOT_URLCONF naming this)."""
import threading

from django.http import JsonResponse
from django.urls import path

from tests.testapp import jobs


async def dispatch_job(request):
    label = request.GET.get("label", "from-asgi")
    uuid = await jobs.record.adelay(label, via="adelay")
    return JsonResponse({"uuid": uuid, "thread": threading.current_thread().name})


urlpatterns = [path("dispatch/", dispatch_job)]
