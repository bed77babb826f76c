"""Settings of the standalone site: embedded defaults, overridable from the environment.

- ``QUEUE_REDIS_URL``: use this Redis; without it a redis-server is started on a unix
  socket under ``var/redis`` (append-only, so jobs survive a restart).
- ``QUEUE_ENCRYPT=1``: the Redis connection encrypts every job's arguments (its
  ``"encrypt": True``, docs/encrypted-jobs.md), with keys derived from the secret key below.
- ``DJANGO_SECRET_KEY``: without it a random key is generated once into ``var/secret_key``.
  ``DJANGO_SECRET_KEY_FALLBACKS``: earlier keys, comma-separated, still accepted (a
  rotation: sessions and encrypted jobs made with them stay readable).
- ``HORIZON_DEBUG=1``, ``HORIZON_ALLOWED_HOSTS=a,b``, ``HORIZON_VAR_DIR``.
- ``HORIZON_HTTPS=1``: production transport settings (Secure cookies, HTTPS redirect,
  HSTS), so ``manage.py check --deploy`` is clean. With it: ``HORIZON_HSTS_SECONDS``
  (default a year), ``HORIZON_HSTS_PRELOAD=1``, ``HORIZON_SSL_REDIRECT=0`` (when the
  proxy already redirects). ``HORIZON_PROXY_SSL_HEADER=1`` trusts
  ``X-Forwarded-Proto: https`` from the proxy (only behind a proxy that sets it).
- ``HORIZON_TRUSTED_PROXY_HEADER=X-Forwarded-For`` (and ``HORIZON_TRUSTED_PROXY_HOPS``,
  default 1): the login and /metrics throttles read the client's address from the entry
  the trusted proxies appended (horizon/login/client_address.py); only behind such proxies.
See docs/deployment.md for the whole checklist.
"""
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("HORIZON_VAR_DIR", BASE_DIR / "var")).resolve()
# var/ holds the database, the secret key and the embedded Redis's append-only file,
# all with unmasked payloads: owner-only, and every file the site creates is 0600.
os.umask(os.umask(0o077) | 0o077)
VAR_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
os.chmod(VAR_DIR, 0o700)


def _secret_key() -> str:
    from_env = os.environ.get("DJANGO_SECRET_KEY")
    if from_env:
        return from_env
    from standalone.secret_key import read_or_create  # race-free between first starts

    return read_or_create(VAR_DIR / "secret_key")


SECRET_KEY = _secret_key()
SECRET_KEY_FALLBACKS = [k for k in os.environ.get("DJANGO_SECRET_KEY_FALLBACKS", "").split(",")
                        if k]
DEBUG = os.environ.get("HORIZON_DEBUG") == "1"
ALLOWED_HOSTS = [h for h in os.environ.get(
    "HORIZON_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h]

INSTALLED_APPS = [
    # The admin without its autodiscover at start-up: urls.py loads the apps' admin modules
    # with the URL conf, so a worker (which never loads it) does not import them (issue 52).
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "queueing",
    "horizon",
    "standalone",  # manage.py serve
    "standalone.demo",  # manage.py demo (make demo): a minute of demo traffic
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

HTTPS = os.environ.get("HORIZON_HTTPS") == "1"
if HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = os.environ.get("HORIZON_SSL_REDIRECT", "1") == "1"
    SECURE_HSTS_SECONDS = int(os.environ.get("HORIZON_HSTS_SECONDS", 365 * 86400))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = os.environ.get("HORIZON_HSTS_PRELOAD") == "1"
    if not SECURE_HSTS_PRELOAD:
        # Preloading is a commitment for the whole domain; opt in with HORIZON_HSTS_PRELOAD=1.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
if os.environ.get("HORIZON_PROXY_SSL_HEADER") == "1":
    # Only behind a proxy that sets (and strips from clients) X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

ROOT_URLCONF = "standalone.urls"
WSGI_APPLICATION = "standalone.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": VAR_DIR / "db.sqlite3",
        # IMMEDIATE: a transaction takes SQLite's write lock at BEGIN, where the busy
        # timeout applies; the default (DEFERRED) upgrades a read to a write mid-way and
        # fails at once with "database is locked" when workers write together. WAL lets
        # the dashboard read while workers write.
        "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE",
                    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"},
    }
}

# The login throttle comes first, so every login form (the admin's too) goes through it
# (horizon/login/throttle.py).
AUTHENTICATION_BACKENDS = [
    "horizon.login.throttle.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
# gunicorn serves the dashboard's few static files itself in the standalone site.
HORIZON_SERVE_STATIC = True

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

QUEUE = {
    "default": "redis",
    "after_commit": True,
    "connections": {
        "redis": {
            "driver": "redis",
            # without QUEUE_REDIS_URL: a redis-server the product starts, its files in
            # var/redis (redis+embedded:// names its folder)
            "url": os.environ.get("QUEUE_REDIS_URL") or f"redis+embedded://{VAR_DIR / 'redis'}",
            "queue": "default",
            "queues": ["high", "default", "low"],
            "retry_after": 30,  # renewed while a job runs; only a dead worker waits it out
            "block_for": 5,
            # QUEUE_ENCRYPT=1: every job's arguments sealed, whatever the job asks
            # (docs/encrypted-jobs.md: what it protects, and from whom).
            "encrypt": os.environ.get("QUEUE_ENCRYPT") == "1",
        },
        # Jobs in the site's own database, committed with the data they refer to
        # (docs/database-driver.md); serve it with `runworker database` or a supervisor
        # whose "connection" is "database".
        "database": {"driver": "database", "database": "default",
                     "queues": ["default"], "retry_after": 90},
        "sync": {"driver": "sync", "queues": "*"},
        "null": {"driver": "null", "queues": "*"},
    },
}

# The supervisors `manage.py horizon` runs (see horizon/configuration/settings.py for every option).
HORIZON: dict[str, object] = {
    "connection": "redis",
    "defaults": {
        "balance": "auto",
        "min_processes": 1,
        "max_processes": 4,
        "tries": 3,
        "backoff": [5, 30, 120],
        "timeout": 60,
        "memory": 128,
    },
    "supervisors": {
        "supervisor-1": {"queues": ["high", "default", "low"]},
    },
    "environments": {
        "local": {"supervisor-1": {"max_processes": 2}},
    },
    "trim": {"completed": 60, "metrics": 1440},  # minutes
}
if os.environ.get("HORIZON_TRUSTED_PROXY_HEADER"):
    HORIZON["trusted_proxy_header"] = os.environ["HORIZON_TRUSTED_PROXY_HEADER"]
    HORIZON["trusted_proxy_hops"] = int(os.environ.get("HORIZON_TRUSTED_PROXY_HOPS") or 1)

# The debug page and error e-mails mask settings and frame variables with the same
# policy as the dashboard (a Redis URL's password in QUEUE was shown).
DEFAULT_EXCEPTION_REPORTER_FILTER = "horizon.security.RedactingExceptionReporterFilter"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"()": "queueing.observability.redaction.RedactingFormatter",
                             "format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"},
                 "null": {"class": "logging.NullHandler"}},
    "loggers": {
        # Per-job records (queueing.observability.job_log): the workers' stdout lines already show
        # them, so here they go nowhere; point this at a JSON or Sentry handler instead
        # (docs/operations.md, "Logging").
        "queueing.job": {"handlers": ["null"], "level": "INFO", "propagate": False},
        "queueing": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "horizon": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Every 500 leaves its traceback (masked) on stderr, i.e. in the journal.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        # Django Tasks' own lines (a failed task's traceback), masked like ours.
        "django_tasks": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        "django.tasks": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}

# Django 6.1 configures outgoing mail (long-wait alerts) with MAILERS and deprecates
# sending without it; this is the SMTP mailer EMAIL_BACKEND defaulted to. Django 5.2 and
# 6.0 keep using the EMAIL_* settings.
import django  # noqa: E402

if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend"}}
