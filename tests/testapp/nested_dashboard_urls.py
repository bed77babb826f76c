"""The dashboard included inside another include, at /ops/horizon/ (issue 51's app URLs
must find it there: tests/horizon/dashboard/test_apps_in_one_site.py)."""
from django.urls import include, path

from standalone.urls import urlpatterns as site

urlpatterns = [
    *[p for p in site if getattr(p, "app_name", None) != "horizon"],
    path("ops/", include([path("horizon/", include("horizon.dashboard.urls"))])),
]
