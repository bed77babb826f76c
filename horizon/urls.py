from django.conf import settings
from django.urls import path, re_path
from django.views.static import serve

from . import views

urlpatterns = [
    path("", views.home, name="home"),
]

if getattr(settings, "HORIZON_SERVE_STATIC", False) and not settings.DEBUG:
    urlpatterns.append(
        re_path(r"^static/(?P<path>.*)$", serve, {"document_root": settings.STATICFILES_DIRS[0]})
    )
