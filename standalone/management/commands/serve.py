"""manage.py serve: the dashboard (gunicorn) and the Horizon master, in one command."""
import sys

from queueing.management.base import ProductCommand
from standalone.launcher import Launcher


class Command(ProductCommand):
    help = "Serve the dashboard with gunicorn and run the Horizon master; Ctrl-C stops both."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument("--web-workers", type=int, default=2)

    def handle(self, *args, bind, web_workers, **options):
        sys.exit(Launcher(bind=bind, web_workers=web_workers, stdout=self.stdout).run())
