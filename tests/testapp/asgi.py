"""The ASGI application the async-dispatch test serves with uvicorn."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

from django.core.asgi import get_asgi_application

application = get_asgi_application()
