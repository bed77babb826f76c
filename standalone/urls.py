"""The standalone site: the dashboard at "/", plus login and logout (and Django's admin,
where staff accounts get ``horizon.view_dashboard`` to look, ``horizon.operate_dashboard``
to act). The login page is throttled (see horizon/security.py)."""
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from django.views.static import serve

from horizon.security import ThrottledLoginView

admin.autodiscover()  # SimpleAdminConfig (settings.py): the admin modules load with the site

urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("admin/", admin.site.urls),
    # Pages link their icon; this answers browsers and tools that ask for the old name.
    path("favicon.ico", RedirectView.as_view(url=static("horizon/favicon.svg"))),
    path("", include("horizon.dashboard.urls")),
]

if getattr(settings, "HORIZON_SERVE_STATIC", False) and not settings.DEBUG:
    urlpatterns.append(
        re_path(r"^static/(?P<path>.*)$", serve, {"document_root": settings.STATICFILES_DIRS[0]})
    )
