"""The base of every management command of the product (queueing, horizon, standalone):
``--version`` names the product's version, not Django's (Django's own ``--version``
answers Django's, which told an operator nothing about the queue they run)."""
import django
from django.core.management.base import BaseCommand

from queueing.version import PRODUCT, __version__


class ProductCommand(BaseCommand):
    def get_version(self) -> str:
        return f"{PRODUCT} {__version__} (Django {django.get_version()})"
