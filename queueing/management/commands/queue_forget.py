"""Delete one failed job from the store."""
from django.core.management.base import CommandError

from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited
from queueing.state import failed


class Command(ProductCommand):
    help = "Delete a failed job."

    def add_arguments(self, parser):
        parser.add_argument("uuid")

    def handle(self, *args, uuid, **options):
        if not failed.forget(uuid):
            raise CommandError(f"no failed job with uuid {uuid}")
        audited("delete failed", uuid)
        self.stdout.write(self.style.SUCCESS(f"Failed job {uuid} deleted."))
